// Types of packages.js (plain JavaScript: jest.config.js and the preload of child processes load it).
export declare const ROOT: string;
export declare const ROOT_MODULES: string;
export declare const TEST_MODULES: string;
/** The shared packages the root has installed (the library's peers, the root's devDependencies). */
export declare const SHARED: readonly string[];
export declare function isShared(request: string): boolean;
/** The folder of an installed package: the root's copy of a shared one, else test/deps/'s, else the root's. */
export declare function packageDir(name: string): string;
/** Every installed top-level package, name → folder: the root's, then those only test/deps/ has. */
export declare function installedPackages(): Map<string, string>;
/** The packages this run swaps for an alias test/deps/ holds (GEMSTONE_TYPEORM_LINE=0.3, GEMSTONE_SQLITE3=5): name → folder. */
export declare function lineAliases(env?: NodeJS.ProcessEnv): Record<string, string>;
/** jest's moduleNameMapper entries: the aliases of this run, then the shared packages to the root's copies. */
export declare function moduleNameMapper(): Record<string, string>;
export declare function useTestPackages(): void;
