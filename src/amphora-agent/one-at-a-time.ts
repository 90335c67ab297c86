/** Tasks that run one after the other, each after the previous one settled, whatever its outcome. */
export class OneAtATime {
  private queue: Promise<unknown> = Promise.resolve();

  run<T>(task: () => Promise<T>): Promise<T> {
    const next = this.queue.then(task, task);
    this.queue = next.catch(() => undefined);
    return next;
  }
}
