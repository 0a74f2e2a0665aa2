import { toolSpecs } from '../../core/tools/json-schema';

/** The model's function specs come from the same zod schemas that check the calls; each turn gets them whole. */
test('every turn gets the same specs, and a spec changed by one caller is not what the next one gets', () => {
  const [first] = toolSpecs(['fs_write']);
  expect(first).toMatchObject({ name: 'fs_write', parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } } } });
  expect(first?.parameters).not.toHaveProperty('$schema');
  const properties = first?.parameters.properties;
  if (typeof properties === 'object' && properties !== null) Reflect.deleteProperty(properties, 'path');
  const [second] = toolSpecs(['fs_write']);
  expect(second?.parameters).toMatchObject({ properties: { path: { type: 'string' } } });
  expect(toolSpecs(['fs_read', 'fs_write']).map((s) => s.name)).toEqual(['fs_read', 'fs_write']);
  expect(() => toolSpecs(['no_such_tool'])).toThrow(/unknown tool no_such_tool/);
});
