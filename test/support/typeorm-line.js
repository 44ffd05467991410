// Preloaded (`node -r`) into the child processes of the tests and tools: test/deps/'s packages and the
// root's shared ones resolve as in the test workers, and with GEMSTONE_TYPEORM_LINE=0.3 or
// GEMSTONE_SQLITE3=5 `require('typeorm')` / `require('sqlite3')` load the version of that run, as
// jest's moduleNameMapper does inside the test workers (one table: lineAliases in packages.js).
require('./packages').useTestPackages();
