import type { Message } from "../../model/types.js";

/** Messages sent to a running agent: `handle.inject()` and `handle.followUp()`. */
export class Mailbox {
  /** Messages `handle.inject()` queued for before the next model request. */
  readonly inbox: Message[] = [];
  /** Messages `handle.followUp()` queued for after the run would otherwise stop. */
  readonly followUps: Message[] = [];
}
