/** A provider's machinery (CA, compute, a database connection) opened by the first flow that needs it. */
export function openOnce<T>(open: () => Promise<T>): () => Promise<T> {
  let opening: Promise<T> | undefined;
  return () => {
    // A failed open is retried by the next caller.
    opening ??= open().catch((e: unknown) => {
      opening = undefined;
      throw e;
    });
    return opening;
  };
}
