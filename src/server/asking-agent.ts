import { Agent, type ApprovalAnswer, Handoff, type RunContext, type ToolCall } from "../index.js";

/** Told when a call waits for a person: the agent's own handler (if any) answered "ask". */
export type OnAsk = (call: ToolCall, ctx: RunContext<any>) => void;

/**
 * A copy of `agent` (and of every agent it hands off to) whose approval handler answers
 * "ask" where the agent has none, and reports each "ask" to `onAsk`.
 *
 * Why: a server consumes every run's events at once (to fan them out to its clients), so an
 * approval is never decided "by the stream". Without a handler the run would deny it at once;
 * with "ask" it waits for `handle.approvals` in memory, or parks when the run has a store —
 * which is what a person behind a web page needs. Handoff targets are copied too because a
 * handoff switches the run's agent, and with it the handler that is consulted.
 */
export function askingAgent<Deps, Output>(
  agent: Agent<Deps, Output>,
  onAsk: OnAsk,
  alwaysAsk?: ReadonlySet<string>,
): Agent<Deps, Output> {
  return copy(agent, onAsk, new Map(), alwaysAsk) as Agent<Deps, Output>;
}

function copy(
  agent: Agent<any, any>,
  onAsk: OnAsk,
  seen: Map<Agent<any, any>, Agent<any, any>>,
  alwaysAsk?: ReadonlySet<string>,
): Agent<any, any> {
  const known = seen.get(agent);
  if (known) return known;
  const own = agent.config.approvalHandler;
  const approvalHandler = async (call: ToolCall, ctx: RunContext<any>): Promise<ApprovalAnswer> => {
    // Tools the client runs itself (AG-UI): only the client can answer their calls, so an
    // approval handler that allows everything must not let one run without its result.
    const answer = alwaysAsk?.has(call.name) ? "ask" : own ? await own(call, ctx) : "ask";
    if (answer === "ask") onAsk(call, ctx);
    return answer;
  };
  // Filled after the copy is registered, so agents that hand off to each other (a cycle) work.
  const handoffs: Array<Agent<any, any> | Handoff<any>> = [];
  const clone = agent.clone({
    approvalHandler,
    ...(agent.config.handoffs && { handoffs }),
  });
  seen.set(agent, clone);
  for (const entry of agent.config.handoffs ?? []) {
    if (entry instanceof Agent) handoffs.push(copy(entry, onAsk, seen));
    else {
      handoffs.push(
        new Handoff(copy(entry.target, onAsk, seen), {
          name: entry.toolName,
          description: entry.description,
          ...(entry.inputFilter && { inputFilter: entry.inputFilter }),
          ...(entry.onHandoff && { onHandoff: entry.onHandoff }),
        }),
      );
    }
  }
  return clone;
}
