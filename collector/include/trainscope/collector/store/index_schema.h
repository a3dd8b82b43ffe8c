// The index's schema and its migrations. The schema version is PRAGMA
// user_version; each migration takes a database from version v to v + 1 in
// one transaction, so a crash leaves it at a whole version. A database of a
// newer version than this build knows is refused, never downgraded.
//
// Usage:
//   ASSIGN_OR_RETURN(auto db, IndexConnection::Open(path));
//   RETURN_IF_ERROR(MigrateIndexSchema(*db));   // now at kIndexSchemaVersion
//
// Adding a column or a table: append one migration to index_schema.cc and
// raise kIndexSchemaVersion.
//
// Threading: as the connection's (one owner).
#ifndef TRAINSCOPE_COLLECTOR_STORE_INDEX_SCHEMA_H_
#define TRAINSCOPE_COLLECTOR_STORE_INDEX_SCHEMA_H_

#include "absl/status/status.h"
#include "trainscope/collector/store/index_connection.h"

namespace trainscope::collector {

// The schema version this build writes.
inline constexpr int kIndexSchemaVersion = 4;

// Brings the database to kIndexSchemaVersion. FAILED_PRECONDITION when it
// was written by a newer version.
absl::Status MigrateIndexSchema(IndexConnection& db);

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_INDEX_SCHEMA_H_
