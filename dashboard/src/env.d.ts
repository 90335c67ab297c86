/** esbuild bundles imported stylesheets beside the script. */
declare module '*.css';

/** The domain's address grammar (src/domain/net.ts) imports node:net; the bundle gives the page a stand-in (scripts/bundle-dashboard.mjs). */
declare module 'node:net' {
  export function isIP(input: string): number;
}
