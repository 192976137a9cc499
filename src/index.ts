// The public surface of "quiver-agents": re-exports only.
export {
  type ArgumentIssue,
  BudgetExceeded,
  InvalidToolArguments,
  ProviderError,
  RunCancelled,
  ToolError,
  type ToolErrorKind,
  UserError,
} from "./errors.js";
export { InProcessToolHost } from "./hosts/in-process.js";
export { type HostedTool, isToolHost, type ToolHost, type ToolHostChange } from "./hosts/tool-host.js";
export { ScriptedModel, type ScriptedTurn } from "./model/scripted.js";
export type {
  AssistantMessage,
  ContentBlock,
  FinishReason,
  ImageBlock,
  JSONSchema,
  Message,
  Model,
  ModelRequest,
  ModelSettings,
  ModelStreamEvent,
  ReasoningBlock,
  SystemMessage,
  TextBlock,
  ToolCall,
  ToolMessage,
  ToolSpec,
  Usage,
  UserMessage,
} from "./model/types.js";
export type { RunOptions } from "./run/active-run.js";
export {
  Agent,
  type AgentConfig,
  type AgentTools,
  type InstructionContext,
  type InstructionFragment,
  type Instructions,
} from "./run/agent.js";
export type { AgentToolOptions } from "./run/agent-tool.js";
export {
  type ApprovalAnswer,
  type ApprovalDecider,
  type ApprovalOutcome,
  Approvals,
} from "./run/approvals.js";
export { Budget, type BudgetLimits } from "./run/budget.js";
export type { CompactionOptions } from "./run/context/compaction.js";
export { getRunContext, type RunContext } from "./run/context.js";
export type { CallError, EventBase, EventOf, RunEvent, RunEventType, StopReason } from "./run/events.js";
export { RunHandle } from "./run/handle.js";
export { Handoff, type HandoffArgs, type HandoffOptions, handoff } from "./run/handoff.js";
export type { RunInput } from "./run/loop.js";
export { OutputValidationError } from "./run/output-type.js";
export {
  type PermissionDecision,
  type PermissionMode,
  type PermissionSubject,
  type Permissions,
  StandardPermissions,
  type StandardPermissionsOptions,
} from "./run/permissions.js";
export {
  type Plugin,
  type PluginConfig,
  type PluginContext,
  PluginSetupError,
  type PluginTeardownContext,
  type PluginTools,
  plugin,
} from "./run/plugin.js";
export { type ModelPrice, modelPrice, setModelPrice } from "./run/pricing.js";
export { RECALL_TOOL_NAME, recallTool } from "./run/recall.js";
export type { AgentsByName } from "./run/recover.js";
export { type LoggedResult, type OpenTurn, type RunState, replay } from "./run/replay.js";
export type { RunResult, ToolCallRecord } from "./run/result.js";
export { loadSession } from "./run/resume.js";
export { type ResumeOptions, Runner } from "./run/runner.js";
export { serializeEvent } from "./run/serialize-event.js";
export { jsonSchema, type TypedJsonSchema } from "./tool/json-schema.js";
export type { InferArgs, ToolParameters } from "./tool/parameters.js";
export { Tool, type ToolConfig, type ToolDefinition, tool } from "./tool/tool.js";
export type {
  ApprovalPredicate,
  ResultRenderer,
  RetryBackoff,
  ToolOptions,
  ToolOutput,
  ToolPolicy,
} from "./tool/types.js";
