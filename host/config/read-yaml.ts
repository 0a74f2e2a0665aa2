import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';

/** A config file read as YAML (JSON is YAML; the extension does not matter), or what kept it from being read, in the words its error shows. */
export type YamlFile = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly problem: string; readonly cause: unknown };

export async function readYamlFile(file: string): Promise<YamlFile> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    return { ok: false, problem: `cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`, cause: err };
  }
  try {
    return { ok: true, value: parseYaml(text, { prettyErrors: true, uniqueKeys: true }) };
  } catch (err) {
    return { ok: false, problem: `not valid YAML/JSON: ${(err as Error).message.split('\n')[0] ?? ''}`, cause: err };
  }
}
