// The product's workflows plus test-only ones, bundled once for the whole run.
export * from '../../workflows';
export { forgeExecute } from './forge-execute';
export { rogueContinueAsNew } from './rogue-continue-as-new';
