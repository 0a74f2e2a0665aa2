/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  testMatch: ['<rootDir>/test/**/*.test.ts'],
  globalSetup: '<rootDir>/test/global-setup.ts',
  // As airlock's entry points do: rule patterns match in linear time.
  setupFiles: ['<rootDir>/test/linear-regex-setup.ts'],
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  testTimeout: 120_000,
  maxWorkers: 2,
};
