'use strict';
/**
 * `airlock/no-module-state`, for the code workflow threads load (core/,
 * workflows/). A workflow thread evaluates those modules once and shares
 * them with every job it runs, so what a module keeps at its top level is
 * kept across jobs: one job's data would reach the next, and a replay would
 * see what other jobs left. Reported:
 *
 * - a top-level `let` or `var`;
 * - a top-level empty `Map`, `Set`, `WeakMap` or `WeakSet`: filled later,
 *   so a cache or a record of what happened;
 * - a top-level regular expression with the `g` or `y` flag (`exec` and
 *   `test` keep their position in it);
 * - inside a function, a change to a top-level binding's contents (its own
 *   or an imported one): an assignment, `++`/`--` or `delete` on a member,
 *   a mutating method (`push`, `set`, `add`, `delete`, `sort`, …), or
 *   `Object.assign`/`Object.defineProperty` on it. Not for the empty
 *   containers and the regular expressions above: they are reported where
 *   they are declared.
 *
 * Building a table at the top level, once, is fine: that runs when the
 * module is loaded. A deliberate shared cache (pure, keyed by what it
 * computes from) says why in an `eslint-disable-next-line` comment where
 * it is declared. What the rule cannot see: a top-level object reached
 * through a call's result or handed to a function as an argument.
 */

const MUTATING_METHODS = new Set(['push', 'pop', 'shift', 'unshift', 'splice', 'sort', 'reverse', 'fill', 'copyWithin', 'set', 'add', 'delete', 'clear']);
const CONTAINERS = new Set(['Map', 'Set', 'WeakMap', 'WeakSet']);
/** Expressions that only wrap another for the type checker (or an optional chain): `(x as T).push(…)` changes x. */
const WRAPPERS = new Set(['TSNonNullExpression', 'TSAsExpression', 'TSSatisfiesExpression', 'TSTypeAssertion', 'ChainExpression']);
const OBJECT_MUTATORS = new Set(['assign', 'defineProperty', 'defineProperties', 'setPrototypeOf']);

const WHY = 'workflow threads share this module with every job they run, so it would carry state from one job to the next. Keep it in the job, or say why a shared cache is safe in an eslint-disable comment.';

/** The top-level variable an identifier names, or undefined (a local, a parameter, a global). */
function topLevelVariable(sourceCode, identifier) {
  for (let scope = sourceCode.getScope(identifier); scope !== null; scope = scope.upper) {
    const variable = scope.set.get(identifier.name);
    if (variable !== undefined) return scope.type === 'module' ? variable : undefined;
  }
  return undefined;
}

/** The identifier at the root of `a.b[c].d`, or undefined (a call's result, `this`, …). */
function rootIdentifier(node) {
  let current = node;
  while (current.type === 'MemberExpression' || WRAPPERS.has(current.type)) {
    current = current.type === 'MemberExpression' ? current.object : current.expression;
  }
  return current.type === 'Identifier' ? current : undefined;
}

/** `new Map()` and its kind with no entries. */
function isEmptyContainer(init) {
  return init != null && init.type === 'NewExpression' && init.callee.type === 'Identifier' && CONTAINERS.has(init.callee.name) && init.arguments.length === 0;
}

/** The flags of a regular expression written as a literal or as `new RegExp(source, 'flags')`, else undefined. */
function regexFlags(init) {
  if (init == null) return undefined;
  if (init.type === 'Literal' && init.regex !== undefined) return init.regex.flags;
  if ((init.type === 'NewExpression' || init.type === 'CallExpression') && init.callee.type === 'Identifier' && init.callee.name === 'RegExp') {
    const flags = init.arguments[1];
    if (flags !== undefined && flags.type === 'Literal' && typeof flags.value === 'string') return flags.value;
  }
  return undefined;
}

function insideFunction(sourceCode, node) {
  return sourceCode.getScope(node).variableScope.type !== 'module';
}

const noModuleState = {
  meta: { type: 'problem', docs: { description: 'No state kept at the top level of a module that workflow threads share across jobs.' }, schema: [] },
  create(context) {
    const sourceCode = context.sourceCode;

    /** Reports a change to `target`'s contents when it happens in a function and its root is a top-level binding. */
    function checkChange(node, target, what) {
      const root = rootIdentifier(target);
      if (root === undefined || !insideFunction(sourceCode, node)) return;
      const variable = topLevelVariable(sourceCode, root);
      if (variable === undefined) return;
      const declared = variable.defs[0]?.node;
      // Reported where declared: an empty container, a regular expression that keeps its position.
      if (declared !== undefined && declared.type === 'VariableDeclarator' && (isEmptyContainer(declared.init) || /[gy]/.test(regexFlags(declared.init) ?? ''))) return;
      context.report({ node, message: `${what} changes the top-level ${root.name}: ${WHY}` });
    }

    return {
      'Program > VariableDeclaration, Program > ExportNamedDeclaration > VariableDeclaration'(node) {
        if (node.kind === 'let' || node.kind === 'var') {
          const names = node.declarations.map((d) => sourceCode.getText(d.id)).join(', ');
          context.report({ node, message: `top-level ${node.kind} ${names}: ${WHY}` });
          return;
        }
        for (const d of node.declarations) {
          const name = sourceCode.getText(d.id);
          const flags = regexFlags(d.init);
          if (flags !== undefined && /[gy]/.test(flags)) {
            context.report({ node: d, message: `top-level regular expression ${name} with the ${flags.replace(/[^gy]/g, '')} flag keeps its position between uses: ${WHY}` });
          } else if (isEmptyContainer(d.init)) {
            context.report({ node: d, message: `top-level empty ${d.init.callee.name} ${name} is filled later: ${WHY}` });
          }
        }
      },
      AssignmentExpression(node) {
        if (node.left.type === 'MemberExpression') checkChange(node, node.left, 'this assignment');
      },
      UpdateExpression(node) {
        if (node.argument.type === 'MemberExpression') checkChange(node, node.argument, `${node.operator}`);
      },
      UnaryExpression(node) {
        if (node.operator === 'delete' && node.argument.type === 'MemberExpression') checkChange(node, node.argument, 'delete');
      },
      CallExpression(node) {
        const callee = node.callee;
        if (callee.type !== 'MemberExpression' || callee.computed || callee.property.type !== 'Identifier') return;
        const method = callee.property.name;
        if (callee.object.type === 'Identifier' && callee.object.name === 'Object' && OBJECT_MUTATORS.has(method)) {
          const first = node.arguments[0];
          if (first !== undefined && first.type !== 'SpreadElement') checkChange(node, first, `Object.${method}`);
          return;
        }
        if (MUTATING_METHODS.has(method)) checkChange(node, callee.object, `.${method}()`);
      },
    };
  },
};

module.exports = { noModuleState };
