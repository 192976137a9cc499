/**
 * `quiver-agents/store`: where runs are kept. Importing it loads no database driver; `SqliteStore`
 * loads better-sqlite3 and `PostgresStore` loads pg when one is constructed.
 */
export { leaseOwner, ownerIsGone } from "./lease-owner.js";
export { MemoryStore } from "./memory-store.js";
export {
  type PostgresClient,
  type PostgresPool,
  PostgresStore,
  type PostgresStoreOptions,
} from "./postgres-store.js";
export { SqliteStore, type SqliteStoreOptions } from "./sqlite-store.js";
export { isTransientFailure } from "./transient.js";
export {
  EVENT_SCHEMA_VERSION,
  type Lease,
  LeaseConflict,
  type RunFilter,
  type RunStatus,
  type RunStore,
  type RunSummary,
  type SessionSummary,
  StoreError,
} from "./types.js";
