import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { airlockSearchAttributeList, type SearchAttributeKind } from '../../core/temporal/search-attributes';
import { AirlockError } from '../../core/util/errors';

const IndexedValueType = temporal.api.enums.v1.IndexedValueType;

const kindToIndexed: Record<SearchAttributeKind, temporal.api.enums.v1.IndexedValueType> = {
  Text: IndexedValueType.INDEXED_VALUE_TYPE_TEXT,
  Keyword: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD,
  Int: IndexedValueType.INDEXED_VALUE_TYPE_INT,
  Double: IndexedValueType.INDEXED_VALUE_TYPE_DOUBLE,
  Bool: IndexedValueType.INDEXED_VALUE_TYPE_BOOL,
  Datetime: IndexedValueType.INDEXED_VALUE_TYPE_DATETIME,
  KeywordList: IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST,
};

/** A search attribute exists with another type than airlock needs. */
export class SearchAttributeConflictError extends AirlockError {
  override name = 'SearchAttributeConflictError';
  constructor(
    readonly attribute: string,
    readonly namespace: string,
  ) {
    super(
      `search attribute ${attribute} already exists in namespace ${namespace} with another type; remove it (temporal operator search-attribute remove) or use another namespace`,
    );
  }
}

/**
 * Registers airlock's search attributes in a namespace, creating only the
 * missing ones: the dev server applies `--search-attribute` flags only when it
 * creates its database file, so an existing file needs this path.
 */
export async function ensureSearchAttributes(connection: Connection, namespace: string): Promise<string[]> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const custom = existing.customAttributes ?? {};
  const missing: Record<string, temporal.api.enums.v1.IndexedValueType> = {};
  for (const { name, type } of airlockSearchAttributeList) {
    const present = custom[name];
    if (present === undefined) {
      missing[name] = kindToIndexed[type];
    } else if (present !== kindToIndexed[type]) {
      throw new SearchAttributeConflictError(name, namespace);
    }
  }
  const added = Object.keys(missing);
  if (added.length > 0) {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes: missing });
    await untilQueryable(connection, namespace, added);
  }
  return added;
}

/**
 * A full server learns new attributes through its namespace cache, refreshed
 * every few seconds: until then a list filtered by them is refused. Waits
 * (up to 30 s) until such a query works, so whatever starts after setup can
 * use them at once.
 */
async function untilQueryable(connection: Connection, namespace: string, names: readonly string[]): Promise<void> {
  const query = names.map((name) => `${name} IS NULL`).join(' AND ');
  for (let i = 0; ; i++) {
    try {
      await connection.workflowService.countWorkflowExecutions({ namespace, query });
      return;
    } catch (err) {
      if (i >= 150) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
