/**
 * Setup that several end-to-end tests need, made once by whichever test asks first: each test
 * awaits what it uses instead of reading what an earlier test left in a variable, so a test
 * run alone, or after one that failed, still has its setup. A failed setup fails every test
 * that asks for it, with its own error.
 */
export function madeOnce<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined;
  return () => (made ??= make());
}
