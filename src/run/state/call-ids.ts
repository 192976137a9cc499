/** The call ids of one run: the provider's when it is new to the run, else one the runner makes. */
export class CallIds {
  readonly #taken = new Set<string>();
  #counter = 0;

  /** The provider's id when it is new to this run, else a fresh one (the caller keeps the original as `providerCallId`). */
  claim(providerId: string | undefined): string {
    if (providerId && !this.#taken.has(providerId)) {
      this.#taken.add(providerId);
      return providerId;
    }
    let id: string;
    do id = `call_q${++this.#counter}`;
    while (this.#taken.has(id));
    this.#taken.add(id);
    return id;
  }

  /** Ids a resumed run already used (from its log). */
  restore(ids: Iterable<string>): void {
    for (const id of ids) this.#taken.add(id);
  }
}
