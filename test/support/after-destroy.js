// A statement sent on a DataSource after it was destroyed is a crash in a user's shutdown; in a
// jest worker it surfaces as "Test suite failed to run" in whichever later file happens to run,
// with no trace of who sent it. This names the sender: the synchronous stack of the call into
// DataSource.query (the part of the stack that async frames would otherwise cut off), printed
// to stderr with the test file that created the DataSource.
const { DataSource } = require('typeorm');

const created = new WeakMap();
const originalInitialize = DataSource.prototype.initialize;
const originalQuery = DataSource.prototype.query;

if (!DataSource.prototype.__gemstoneAfterDestroyGuard) {
  Object.defineProperty(DataSource.prototype, '__gemstoneAfterDestroyGuard', { value: true });
  DataSource.prototype.initialize = function initialize(...args) {
    created.set(this, expect.getState().testPath ?? '(unknown file)');
    return originalInitialize.apply(this, args);
  };
  DataSource.prototype.query = function query(...args) {
    if (!this.isInitialized && created.has(this)) {
      const limit = Error.stackTraceLimit;
      Error.stackTraceLimit = 40;
      const trace = new Error('a statement was sent on a destroyed DataSource').stack;
      Error.stackTraceLimit = limit;
      process.stderr.write(`\n[after-destroy] DataSource created by ${created.get(this)}\n${trace}\nstatement: ${String(args[0]).slice(0, 200)}\n`);
    }
    return originalQuery.apply(this, args);
  };
}
