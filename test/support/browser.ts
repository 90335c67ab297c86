/**
 * Debian's Chromium driven by playwright-core, for the dashboard's tests and bench. Playwright's
 * own browser download cannot work on a machine without the internet, so it is pointed at
 * /usr/bin/chromium, with Chromium's background connections (updates, sync, Google's hosts)
 * turned off: the closed network would refuse them, many at a time.
 */
import { mkdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';

export const DESKTOP = { width: 1280, height: 800 } as const;
export const PHONE = { width: 390, height: 844 } as const;

export async function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
    timeout: 60_000,
  });
}

export interface Login {
  user: string;
  password: string;
  project?: string;
}

/**
 * A new page (its own context: no token shared with another page) logged in through the form.
 * Every request the page makes is recorded, to prove it made none off this origin.
 */
export async function loggedIn(browser: Browser, baseUrl: string, login: Login, viewport: { width: number; height: number } = DESKTOP): Promise<{ page: Page; requests: string[] }> {
  const context = await browser.newContext({ viewport });
  context.setDefaultTimeout(60_000);
  const page = await context.newPage();
  const requests: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  await page.goto(`${baseUrl}/dashboard`);
  await page.getByLabel('User').fill(login.user);
  await page.getByLabel('Password').fill(login.password);
  if (login.project) await page.getByLabel('Project', { exact: true }).fill(login.project);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Load balancers', level: 1 }).waitFor();
  return { page, requests };
}

/** Where the run's screenshots go: OSTIA_SCREENSHOT_DIR (the README's come from docs/dashboard), else dist/screenshots/dashboard. */
export function screenshotDir(): string {
  const dir = process.env.OSTIA_SCREENSHOT_DIR ?? join('dist', 'screenshots', 'dashboard');
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** A PNG's width and height from its IHDR chunk, or null when the file is not a PNG. */
export function pngSize(file: string): { width: number; height: number } | null {
  const b = readFileSync(file);
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  if (b.length < 24 || !b.subarray(0, 8).equals(signature) || b.subarray(12, 16).toString('latin1') !== 'IHDR') return null;
  return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
}

/**
 * A full-page screenshot taken once every expected text is on the page, checked to be a PNG of
 * the page's width that holds more than a blank page's bytes. Returns the text the page showed.
 */
export async function screenshot(page: Page, name: string, expected: readonly string[]): Promise<{ file: string; text: string }> {
  for (const t of expected) await page.getByText(t, { exact: false }).filter({ visible: true }).first().waitFor();
  const text = await page.locator('body').innerText();
  const file = join(screenshotDir(), `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  const size = pngSize(file);
  if (!size) throw new Error(`${file} is not a PNG`);
  const viewport = page.viewportSize();
  if (viewport && size.width !== viewport.width) throw new Error(`${file} is ${size.width} px wide, the page ${viewport.width}`);
  // A blank 1280×800 page compresses to a few kB; a page with text and colours to tens.
  if (statSync(file).size < 8_000) throw new Error(`${file} holds ${statSync(file).size} bytes: an empty page?`);
  return { file, text };
}
