import { nestedDeeperThan } from "../json-depth.js";

/**
 * How deep a request body may nest. No message, state, tool schema or A2A part a client means to
 * send comes near it. A body thousands of levels deep (well under the size limit) overflows the
 * stack of whatever walks it next — AG-UI's input schema on `state` at about 3,000 levels, a
 * client tool's `parameters` at about 10,000, the A2A SDK on a 0.3 message's `metadata` — and the
 * client got a 500 that paged the operator for its own bad input.
 */
export const MAX_BODY_DEPTH = 256;

/**
 * Where `body` nests deeper than `max` levels (the body itself is level 1): the name of its
 * top-level field that does (`"state"`, `"tools"`), or `undefined` when none does. Walked with a
 * stack of its own, so the check cannot overflow on what it checks.
 *
 * @example
 * tooDeep(JSON.parse('{"state":{"a":{"b":{}}}}'), 3); // "state"
 */
export function tooDeep(body: Record<string, unknown>, max = MAX_BODY_DEPTH): string | undefined {
  return Object.keys(body).find((field) => nestedDeeperThan(body[field], max - 1));
}
