/// <reference types="node" preserve="true" />
import * as fs from 'fs';
import * as path from 'path';
import { FAVICON_SVG, PAGE_HTML } from './page';
import { PAGE_CSS } from './style';

export interface Asset {
  readonly type: string;
  readonly body: Buffer;
}

/** The compiled browser modules, next to this file's directory in the package (`dist/src/dashboard/client`). */
export const CLIENT_DIR = path.join(__dirname, '..', 'client');

const MODULE_NAME = /^[a-z][a-z0-9-]*\.js$/;

/**
 * The page, its stylesheet and its modules, read once: a fixed set of files shipped in the
 * package, so no request can name anything else.
 */
export function loadAssets(): ReadonlyMap<string, Asset> {
  const assets = new Map<string, Asset>([
    ['/', { type: 'text/html; charset=utf-8', body: Buffer.from(PAGE_HTML, 'utf8') }],
    ['/style.css', { type: 'text/css; charset=utf-8', body: Buffer.from(PAGE_CSS, 'utf8') }],
    ['/favicon.svg', { type: 'image/svg+xml', body: Buffer.from(FAVICON_SVG, 'utf8') }],
  ]);
  let names: string[];
  try {
    names = fs.readdirSync(CLIENT_DIR).filter((name) => MODULE_NAME.test(name));
  } catch (error) {
    throw new Error(`gemstone-utils dashboard: the page's scripts are missing (${CLIENT_DIR}): run npm run build`, { cause: error });
  }
  for (const name of names) {
    assets.set(`/client/${name}`, { type: 'text/javascript; charset=utf-8', body: fs.readFileSync(path.join(CLIENT_DIR, name)) });
  }
  if (!assets.has('/client/main.js')) throw new Error(`gemstone-utils dashboard: ${CLIENT_DIR} has no main.js: run npm run build`);
  return assets;
}
