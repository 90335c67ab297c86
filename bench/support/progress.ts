/** The benches' progress lines: on stderr, marked with `#`, so that stdout holds the report alone. */
export const progress = (msg: string): void => {
  process.stderr.write(`# ${msg}\n`);
};
