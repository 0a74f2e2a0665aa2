import { builtinModules } from 'node:module';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import airlockLint from './scripts/lint/plugin.cjs';

// workflows/ and core/ run inside the deterministic workflow sandbox (core/ is imported by it):
// no Node built-ins, no network clients, no non-workflow Temporal packages.
const sandboxBanned = {
  paths: [
    ...builtinModules.flatMap((m) => [m, `node:${m}`]).map((name) => ({ name, message: 'Node built-ins are not allowed in workflow code or core/.' })),
    { name: 'openai', message: 'Model calls belong in activities/.' },
    { name: '@temporalio/client', message: 'Not allowed in workflow code or core/.' },
    { name: '@temporalio/worker', message: 'Not allowed in workflow code or core/.' },
    { name: '@temporalio/activity', message: 'Not allowed in workflow code or core/.' },
  ],
  patterns: [{ group: ['node:*'], message: 'Node built-ins are not allowed in workflow code or core/.' }],
};

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '.cache/**', '.airlock/**', 'coverage/**', 'bin/**', 'eslint.config.mjs', 'jest.config.js', 'scripts/**/*.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' }],
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
  {
    // No import circles anywhere in the sources (tests may import what they like), and each top folder imports only the
    // floors below it, as its README.md lists them.
    files: ['core/**/*.ts', 'workflows/**/*.ts', 'activities/**/*.ts', 'host/**/*.ts', 'workers/**/*.ts', 'client/**/*.ts', 'servers/**/*.ts', 'ops/**/*.ts', 'cli/**/*.ts', 'scripts/**/*.ts'],
    plugins: { airlock: airlockLint.plugin },
    rules: { 'airlock/no-import-cycle': 'error', 'airlock/floors': 'error' },
  },
  {
    // core/ is pure; each of its folders imports only the folders its header lists ("May import: ...").
    // What workflow threads load is shared by every job they run: no state at a module's top level.
    files: ['core/**/*.ts', 'workflows/**/*.ts'],
    rules: { 'airlock/no-module-state': 'error' },
  },
  {
    files: ['core/**/*.ts'],
    rules: {
      'airlock/core-layers': 'error',
      '@typescript-eslint/no-restricted-imports': ['error', sandboxBanned],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': ['error', {
        ...sandboxBanned,
        patterns: [
          ...sandboxBanned.patterns,
          { group: ['../activities', '../activities/*'], allowTypeImports: true, message: 'Workflows see activities only as types.' },
          { group: ['../workers/*', '../client/*', '../servers/*', '../ops/*', '../cli/*', '../host/*'], message: 'Workflows import only @temporalio/workflow, core/ and activity types.' },
        ],
      }],
    },
  },
  {
    files: ['test/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
);
