/**
 * A value computed on first use and shared by the tests of a file: an uninterrupted baseline run
 * that several kill tests compare with is run once, whichever test needs it first.
 */
export function once<T>(compute: () => Promise<T>): () => Promise<T> {
  let value: Promise<T> | undefined;
  return () => (value ??= compute());
}
