'use strict';
/** The project's own lint rules, as one ESLint plugin (`airlock/…`): plain CommonJS, so ESLint's config loads them without a build. */
const { rules: importRules } = require('./import-rules.cjs');
const { noModuleState } = require('./module-state-rule.cjs');

module.exports = { plugin: { meta: { name: 'airlock' }, rules: { ...importRules, 'no-module-state': noModuleState } } };
