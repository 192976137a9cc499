import { toPlainJson } from "../../plain-json.js";

/**
 * A run's shared state (`ctx.state`; AG-UI's agent state): one JSON value tools read and
 * replace, owned by the root run and shared by its child runs. Whoever changes it emits the
 * root run's `state_updated`, so the log can rebuild it on resume.
 *
 * @example
 * const state = new SharedState({ items: [] });
 * state.set((previous) => ({ items: [...(previous as { items: string[] }).items, "milk"] }));
 */
export class SharedState {
  #value: unknown;

  constructor(initial: unknown) {
    this.#value = frozenJson(initial);
  }

  /** The current state: frozen plain JSON. */
  get value(): unknown {
    return this.#value;
  }

  /** Replaces the state with `next`, or with what `next(previous)` returns; returns the stored value. */
  set(next: unknown): unknown {
    const value = typeof next === "function" ? (next as (previous: unknown) => unknown)(this.#value) : next;
    this.#value = frozenJson(value);
    return this.#value;
  }

  /** The state a resumed run had reached, from its log (no event: it is already stored). */
  restore(value: unknown): void {
    this.#value = frozenJson(value);
  }
}

/** `value` as plain JSON (a copy: the caller's object can change afterwards), frozen all the way down. */
function frozenJson(value: unknown): unknown {
  if (value === undefined) return undefined;
  return deepFreeze(structuredClone(toPlainJson(value)));
}

function deepFreeze(value: unknown): unknown {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}
