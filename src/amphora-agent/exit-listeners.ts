/** Who waits for a supervised child's exit (HAProxy, keepalived): a start watching for it, a stop waiting for it. */
export class ExitListeners<Exit> {
  private readonly listeners = new Set<(exit: Exit) => void>();

  add(listener: (exit: Exit) => void): void {
    this.listeners.add(listener);
  }

  delete(listener: (exit: Exit) => void): void {
    this.listeners.delete(listener);
  }

  /** The child exited: each listener waiting now hears it, once. */
  notify(exit: Exit): void {
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const listener of listeners) listener(exit);
  }

  /** Resolves true when the child exits within `ms`, false otherwise. */
  within(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const onExit = (): void => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.listeners.delete(onExit);
        resolve(false);
      }, ms);
      this.listeners.add(onExit);
    });
  }
}
