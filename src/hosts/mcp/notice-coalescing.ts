/** How long repeats of a `…/list_changed` notification are folded into one. */
export const COALESCE_MS = 50;

type Deliver<M, X> = (message: M, extra?: X) => void;

/**
 * Folds floods of `notifications/*\/list_changed` into at most two deliveries per window: the
 * first at once, and one more for any repeats — delivered at the end of the window, or just
 * before the next other message, whichever comes first, so a change a server announces
 * before answering a call is always seen before the answer. These notifications carry no
 * data, so nothing is lost; a server sending thousands a second costs a few deliveries, not
 * thousands of parses and handler runs. Every message of the connection must go through the
 * returned function, to keep that order.
 *
 * @example
 * const deliver = coalesceListChanged((message, extra) => handler(message, extra));
 */
export function coalesceListChanged<M, X>(deliver: Deliver<M, X>): Deliver<M, X> {
  const windows = new Map<string, { again: M | undefined }>();
  const flush = () => {
    for (const window of windows.values()) {
      const again = window.again;
      window.again = undefined;
      if (again !== undefined) deliver(again);
    }
  };
  return (message, extra) => {
    const method = isListChanged(message) ? (message as { method: string }).method : undefined;
    if (method === undefined) {
      if (windows.size > 0) flush();
      return deliver(message, extra);
    }
    const open = windows.get(method);
    if (open) {
      open.again = message;
      return;
    }
    const window: { again: M | undefined } = { again: undefined };
    windows.set(method, window);
    const timer = setTimeout(() => {
      windows.delete(method);
      if (window.again !== undefined) deliver(window.again);
    }, COALESCE_MS);
    timer.unref?.();
    deliver(message, extra);
  };
}

/** A notification (no id) whose method ends in `/list_changed`. */
export function isListChanged(message: unknown): boolean {
  const m = message as { method?: unknown; id?: unknown } | null;
  return typeof m?.method === "string" && m.id === undefined && m.method.endsWith("/list_changed");
}
