import { randomUUID } from "node:crypto";
import { InvalidToolArguments, ToolError, UserError } from "../errors.js";
import { jsonSchema } from "../tool/json-schema.js";
import { type Tool, tool } from "../tool/tool.js";

/** A suggested answer the model attaches to a question. Any free text stays a valid answer. */
export type QuestionOption = { label: string; description?: string };

/** A question the model asked, as the operator side receives it. */
export type HumanQuestion = {
  id: string;
  question: string;
  options: QuestionOption[];
  multiSelect: boolean;
  sessionId?: string;
  runId: string;
  /** The id of the `ask_human` call that asked (its events carry the same id). */
  callId?: string;
};

type Waiting = { question: HumanQuestion; resolve: (text: string) => void; reject: (error: Error) => void };

/**
 * The operator side of `ask_human`: questions arrive here, answers go back through it.
 *
 * @example
 * const channel = new HumanChannel();
 * const agent = new Agent({ name: "assistant", model, tools: [askHuman(channel)] });
 * for await (const q of channel.questions()) channel.answer(q.id, await promptUser(q.question, q.options));
 */
export class HumanChannel {
  readonly #waiting = new Map<string, Waiting>();
  #closedReason: string | undefined;
  #consumer = false;
  #wake: (() => void) | undefined;

  /** Questions not answered yet, oldest first (a snapshot, for polling). */
  get pending(): HumanQuestion[] {
    return [...this.#waiting.values()].map((w) => w.question);
  }

  /** True after `close()`. */
  get closed(): boolean {
    return this.#closedReason !== undefined;
  }

  /**
   * Every question as it is asked, starting with those already waiting (the backlog); one
   * consumer per channel. Questions answered or cancelled before they are reached are skipped.
   * Ends when the channel closes.
   */
  async *questions(): AsyncIterable<HumanQuestion> {
    if (this.#consumer)
      throw new UserError(
        "a HumanChannel has one questions() consumer; use `pending` to poll from elsewhere",
      );
    this.#consumer = true;
    const delivered = new Set<string>();
    try {
      while (true) {
        const next = [...this.#waiting.values()].find((w) => !delivered.has(w.question.id));
        if (next) {
          delivered.add(next.question.id);
          yield next.question;
          continue;
        }
        if (this.closed) return;
        await new Promise<void>((resolve) => {
          this.#wake = resolve;
        });
      }
    } finally {
      this.#consumer = false;
    }
  }

  /** Answers a question; the tool returns `text`. Returns false when no such question waits. */
  answer(id: string, text: string): boolean {
    const waiting = this.#take(id);
    waiting?.resolve(text);
    return waiting !== undefined;
  }

  /** Fails one question with an error the model reads. */
  cancel(id: string, reason = "the question was cancelled"): boolean {
    const waiting = this.#take(id);
    waiting?.reject(
      new ToolError(`nobody answered: ${reason}`, {
        hint: "Continue without the answer or ask differently.",
      }),
    );
    return waiting !== undefined;
  }

  /** Cancels every waiting question, ends `questions()`, and makes later asks fail at once. */
  close(reason = "the channel was closed"): void {
    if (this.closed) return;
    this.#closedReason = reason;
    for (const id of [...this.#waiting.keys()]) this.cancel(id, reason);
    this.#notify();
  }

  /** Asks a question and waits for its answer (used by the `ask_human` tool). */
  ask(question: Omit<HumanQuestion, "id">, signal?: AbortSignal): Promise<string> {
    if (this.closed) {
      return Promise.reject(
        new ToolError(`nobody can be asked: ${this.#closedReason}`, { hint: "Continue without asking." }),
      );
    }
    const full: HumanQuestion = { id: `q_${randomUUID()}`, ...question };
    return new Promise<string>((resolve, reject) => {
      const onAbort = () => {
        if (this.#take(full.id)) reject(signal?.reason ?? new Error("aborted"));
      };
      const done = () => signal?.removeEventListener("abort", onAbort);
      this.#waiting.set(full.id, {
        question: full,
        resolve: (text) => {
          done();
          resolve(text);
        },
        reject: (error) => {
          done();
          reject(error);
        },
      });
      if (signal?.aborted) onAbort();
      else signal?.addEventListener("abort", onAbort, { once: true });
      this.#notify();
    });
  }

  #take(id: string): Waiting | undefined {
    const waiting = this.#waiting.get(id);
    if (waiting) this.#waiting.delete(id);
    return waiting;
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

type AskArgs = { question: string; options?: QuestionOption[]; multi_select?: boolean };

/**
 * A tool that lets the model ask the operator for information mid-run (the inverse of
 * approval). It is a barrier: a run has at most one question open at a time. Add a
 * `timeoutMs` when operators may be away.
 *
 * @example
 * const channel = new HumanChannel();
 * const agent = new Agent({ name: "planner", model, tools: [askHuman(channel)] });
 */
export function askHuman(
  channel: HumanChannel,
  options: { name?: string; timeoutMs?: number } = {},
): Tool<AskArgs> {
  return tool({
    name: options.name ?? "ask_human",
    description:
      "Ask the user a question when you need information only they have. Optionally offer 2-4 suggested " +
      "answers as options (the user may still answer freely); set multi_select when several may apply. " +
      "The answer comes back as text (several selected labels are joined with newlines).",
    parameters: jsonSchema<AskArgs>({
      type: "object",
      properties: {
        question: { type: "string", minLength: 1, description: "The question, in full." },
        options: {
          type: "array",
          minItems: 2,
          maxItems: 4,
          description: "Suggested answers.",
          items: {
            type: "object",
            properties: {
              label: {
                type: "string",
                minLength: 1,
                maxLength: 100,
                pattern: "^[^\\r\\n]+$",
                description: "A short, single-line answer.",
              },
              description: { type: "string", description: "One line on what choosing it means." },
            },
            required: ["label"],
            additionalProperties: false,
          },
        },
        multi_select: {
          type: "boolean",
          default: false,
          description: "Whether several options may be chosen.",
        },
      },
      required: ["question"],
      additionalProperties: false,
    }),
    parallel: false,
    readOnly: true,
    ...(options.timeoutMs !== undefined && { timeoutMs: options.timeoutMs }),
    execute: async (args, ctx) => {
      const choices = args.options ?? [];
      const labels = choices.map((o) => o.label.trim());
      const duplicate = labels.find((label, i) => labels.indexOf(label) !== i);
      if (duplicate !== undefined) {
        throw new InvalidToolArguments(options.name ?? "ask_human", [
          { path: "options", message: `labels must be unique; "${duplicate}" repeats` },
        ]);
      }
      return channel.ask(
        {
          question: args.question,
          options: choices,
          // Without options there is nothing to select, so the flag is meaningless.
          multiSelect: choices.length > 0 && args.multi_select === true,
          ...(ctx.sessionId !== undefined && { sessionId: ctx.sessionId }),
          runId: ctx.runId,
          callId: ctx.toolCallId,
        },
        ctx.signal,
      );
    },
  });
}
