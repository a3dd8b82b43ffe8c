// One prepared SQLite statement, prepared once and run many times: each run
// binds, steps and is reset (bindings cleared) so that it can run again.
// Finalized when destroyed, which must happen before its connection closes.
//
// Usage:
//   SqliteStatement st;
//   if (st.Prepare(db, "SELECT a, b FROM t WHERE k = ?1") != SQLITE_OK) ...;
//   st.Bind(1, key);
//   while (st.Step() == SQLITE_ROW) use(st.Int(0), st.Text(1));
//   st.Reset();
//
// Threading: not thread-safe; used by its connection's owner.
#ifndef TRAINSCOPE_COLLECTOR_STORE_SQLITE_STATEMENT_H_
#define TRAINSCOPE_COLLECTOR_STORE_SQLITE_STATEMENT_H_

#include <cstdint>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace trainscope::collector {

class SqliteStatement {
 public:
  SqliteStatement() = default;
  SqliteStatement(const SqliteStatement&) = delete;
  SqliteStatement& operator=(const SqliteStatement&) = delete;
  ~SqliteStatement();

  // Returns SQLite's result code (SQLITE_OK on success; the connection's
  // error says why not).
  int Prepare(sqlite3* db, const char* sql);
  sqlite3_stmt* get() const { return stmt_; }

  // Parameters are numbered from 1; text and blobs are copied.
  void Bind(int index, int64_t value);
  void Bind(int index, const std::string& value);
  void BindBlob(int index, const std::string& value);
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step();
  // Ready to run again, with no bindings.
  void Reset();
  // Columns of the current row, numbered from 0.
  int64_t Int(int column) const;
  std::string Text(int column) const;

 private:
  sqlite3_stmt* stmt_ = nullptr;
};

}  // namespace trainscope::collector

#endif  // TRAINSCOPE_COLLECTOR_STORE_SQLITE_STATEMENT_H_
