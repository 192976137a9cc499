/**
 * Finding the stored runs a supervisor should pick up after a restart: unfinished, not driven
 * by a live process, and of an agent it knows.
 */
import { UserError } from "../../errors.js";
import { ownerIsGone } from "../../store/lease-owner.js";
import { failedForStore } from "../../store/log-rules.js";
import type { RunStore } from "../../store/types.js";
import type { Agent } from "../config/agent.js";
import { replay } from "./replay.js";

/** The agents a supervisor can resume, by name: a plain object or a Map. */
export type AgentsByName = Readonly<Record<string, Agent<any, any>>> | ReadonlyMap<string, Agent<any, any>>;

/**
 * The runs `Runner.recover` resumes, oldest first: top-level runs that are `running`, or
 * `failed` because their store was unavailable, with no live lease (none, or one whose process
 * is gone from this machine), and `parked` runs whose every pending approval has a stored
 * decision. Runs of agents not in `agents` are left to whoever knows them.
 */
export async function recoverableRuns(
  store: RunStore,
  agents: AgentsByName,
): Promise<Array<{ runId: string; agent: Agent<any, any> }>> {
  const byName = (name: string): Agent<any, any> | undefined =>
    agents instanceof Map
      ? agents.get(name)
      : Object.hasOwn(agents, name)
        ? (agents as Record<string, Agent<any, any>>)[name]
        : undefined;
  if (agents === null || typeof agents !== "object") {
    throw new UserError("Runner.recover needs the agents it may resume, by name: { [name]: agent } or a Map");
  }
  const found: Array<{ runId: string; agent: Agent<any, any> }> = [];
  for (const summary of await store.listRuns({ status: ["running", "parked", "failed"] })) {
    if (summary.status === "failed" && !failedForStore(summary)) continue;
    if (summary.parentRunId !== undefined) continue;
    if (summary.leaseOwner !== undefined && !ownerIsGone(summary.leaseOwner)) continue;
    const agent = byName(summary.agent);
    if (agent === undefined) continue;
    if (summary.status === "parked" && !(await everyApprovalDecided(store, summary.runId))) continue;
    found.push({ runId: summary.runId, agent });
  }
  return found;
}

/** True when a parked run has a stored decision for every approval it waits on. */
async function everyApprovalDecided(store: RunStore, runId: string): Promise<boolean> {
  const open = replay(await store.read(runId)).openTurn;
  if (!open || open.asked.size === 0) return false;
  for (const id of open.asked) if (!open.decisions.has(id)) return false;
  return true;
}
