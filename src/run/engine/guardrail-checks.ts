import { timeoutSignal } from "../../abort.js";
import type { Guardrail, GuardrailStage, GuardrailSubject } from "../../contract/guardrails.js";
import type { ContentBlock, Message } from "../../model/types.js";
import { toPlainJson } from "../../plain-json.js";
import { thrownMessage } from "../../thrown.js";
import { GuardrailTripped } from "../config/guardrail.js";
import type { ActiveRun } from "../state/active-run.js";

/** A stored or fresh outcome of one guardrail check. */
export type GuardrailOutcome = { tripped: boolean; reason?: string; info?: unknown };

/** Where a check's outcome is kept in a run: its stage, guardrail, call and agent. */
export function guardrailKey(
  stage: GuardrailStage,
  guardrail: string,
  agent: string,
  callId?: string,
): string {
  return `${stage}\u0000${guardrail}\u0000${agent}\u0000${callId ?? ""}`;
}

/**
 * Runs guardrails of one stage side by side and resolves to the first (in list order) that
 * tripped, as a `GuardrailTripped`. Each outcome is one event (`guardrail_passed` /
 * `guardrail_tripped`), so a resumed run takes a stored outcome instead of checking again. A
 * check that throws or outlasts its `timeoutMs` trips: a guardrail fails closed.
 */
export async function runGuardrails(
  run: ActiveRun,
  guardrails: ReadonlyArray<Guardrail<any>>,
  subject: GuardrailSubject,
  callId?: string,
  scope?: string,
): Promise<GuardrailTripped | undefined> {
  const outcomes = await Promise.all(guardrails.map((g) => checkOne(run, g, subject, callId, scope)));
  for (let i = 0; i < guardrails.length; i++) {
    const outcome = outcomes[i]!;
    if (outcome.tripped) {
      const reason = outcome.reason ?? `guardrail "${guardrails[i]!.name}" tripped`;
      return new GuardrailTripped(guardrails[i]!.name, subject.stage, reason, outcome.info);
    }
  }
  return undefined;
}

async function checkOne(
  run: ActiveRun,
  guardrail: Guardrail<any>,
  subject: GuardrailSubject,
  callId: string | undefined,
  scope: string | undefined,
): Promise<GuardrailOutcome> {
  // `scope` tells apart checks of one stage that are not about a call (a message injected later
  // is input checked again); it is not logged, so a resumed run checks such input once more.
  const key = guardrailKey(subject.stage, guardrail.name, run.agent.name, callId ?? scope);
  const stored = run.guardrailOutcomes.get(key);
  if (stored) return stored;
  const started = performance.now();
  const outcome = await check(run, guardrail, subject);
  // A run that stopped meanwhile records nothing: a resumed run checks again.
  if (run.control.stopper.aborted && !(run.control.stopper.reason instanceof GuardrailTripped))
    return outcome;
  run.guardrailOutcomes.set(key, outcome);
  const durationMs = Math.round(performance.now() - started);
  if (outcome.tripped) {
    run.events.emit({
      type: "guardrail_tripped",
      guardrail: guardrail.name,
      stage: subject.stage,
      reason: outcome.reason ?? `guardrail "${guardrail.name}" tripped`,
      ...(outcome.info !== undefined && { info: outcome.info }),
      ...(callId !== undefined && { callId }),
      durationMs,
    });
  } else {
    run.events.emit({
      type: "guardrail_passed",
      guardrail: guardrail.name,
      stage: subject.stage,
      ...(callId !== undefined && { callId }),
      durationMs,
    });
  }
  return outcome;
}

/** One check, bounded by its timeout and the run's signal; whatever goes wrong trips it. */
function check(
  run: ActiveRun,
  guardrail: Guardrail<any>,
  subject: GuardrailSubject,
): Promise<GuardrailOutcome> {
  const deadline = timeoutSignal(guardrail.timeoutMs);
  const timeout = deadline.signal;
  const signal = AbortSignal.any([run.control.signal, timeout]);
  const ctx = { ...run.baseContext(), agent: run.agent.name, signal };
  const answered = new Promise<GuardrailOutcome>((resolve) => {
    const onAbort = () =>
      resolve({
        tripped: true,
        reason: timeout.aborted
          ? `guardrail "${guardrail.name}" did not answer within ${guardrail.timeoutMs} ms`
          : `the run stopped while guardrail "${guardrail.name}" was checking`,
      });
    signal.addEventListener("abort", onAbort, { once: true });
    let answer: unknown;
    try {
      answer = guardrail.check(subject, ctx);
    } catch (error) {
      answer = Promise.reject(error);
    }
    Promise.resolve(answer).then(
      (result) => {
        signal.removeEventListener("abort", onAbort);
        resolve(readResult(guardrail, result));
      },
      (error: unknown) => {
        signal.removeEventListener("abort", onAbort);
        resolve({ tripped: true, reason: `guardrail "${guardrail.name}" failed: ${thrownMessage(error)}` });
      },
    );
  });
  return answered.finally(deadline.clear);
}

/** The longest `reason` kept from a check (it goes into events, the log and errors). */
const MAX_REASON_CHARS = 10_000;

/** A check's answer as a short text for the reason it tripped (`{}`, not `[object Object]`). */
function answerText(result: unknown): string {
  if (result === undefined) return "undefined";
  try {
    const text = JSON.stringify(toPlainJson(result));
    return text.length > 200 ? `${text.slice(0, 200)}…` : text;
  } catch {
    return thrownMessage(result);
  }
}

/** A check's answer, read without trusting it: anything but `{ tripped: false }` trips. */
function readResult(guardrail: Guardrail<any>, result: unknown): GuardrailOutcome {
  try {
    if (
      result === null ||
      typeof result !== "object" ||
      typeof (result as { tripped?: unknown }).tripped !== "boolean"
    ) {
      return {
        tripped: true,
        reason: `guardrail "${guardrail.name}" answered ${answerText(result)}, not { tripped: boolean }`,
      };
    }
    const { tripped, reason, info } = result as { tripped: boolean; reason?: unknown; info?: unknown };
    const outcome: GuardrailOutcome = { tripped };
    if (typeof reason === "string")
      outcome.reason = reason.length > MAX_REASON_CHARS ? `${reason.slice(0, MAX_REASON_CHARS)} […]` : reason;
    // Events and the log hold plain JSON: a cycle or a bigint in `info` must not break either.
    if (info !== undefined) outcome.info = toPlainJson(info);
    return outcome;
  } catch (error) {
    return {
      tripped: true,
      reason: `guardrail "${guardrail.name}" answered unreadably: ${thrownMessage(error)}`,
    };
  }
}

/**
 * What an agent's input guardrails check: the latest user message (with the messages injected
 * right after it, which the model reads as one input), and the messages the agent starts from.
 */
export function inputSubject(transcript: readonly Message[]): GuardrailSubject {
  let last = transcript.length - 1;
  while (last >= 0 && transcript[last]!.role !== "user") last--;
  let first = last;
  while (first > 0 && transcript[first - 1]!.role === "user") first--;
  const texts: string[] = [];
  for (let i = Math.max(first, 0); i <= last; i++) texts.push(textOf(transcript[i]!.content));
  return { stage: "input", text: texts.join("\n\n"), messages: transcript };
}

function textOf(content: string | readonly ContentBlock[]): string {
  if (typeof content === "string") return content;
  return content
    .filter((block): block is Extract<ContentBlock, { type: "text" }> => block.type === "text")
    .map((block) => block.text)
    .join("\n");
}
