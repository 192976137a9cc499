// The public surface of "quiver-agents": re-exports only.

export type { ApprovalAnswer, ApprovalDecider, ApprovalOutcome } from "./contract/approvals.js";
export type {
  CallError,
  EventBase,
  EventOf,
  RunEvent,
  RunEventType,
  RunFailedKind,
  StopReason,
} from "./contract/events.js";
export type {
  Guardrail,
  GuardrailContext,
  GuardrailResult,
  GuardrailStage,
  GuardrailSubject,
  Guardrails,
} from "./contract/guardrails.js";
export type { InstructionContext, InstructionFragment, Instructions } from "./contract/instructions.js";
export type {
  CallDescription,
  PermissionDecision,
  PermissionSubject,
  Permissions,
} from "./contract/permissions.js";
export type { RunContext, RunMailbox } from "./contract/run-context.js";
export { serializeEvent } from "./contract/serialize-event.js";
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
export {
  FALLBACK_WAIT_MS,
  type FallbackFailure,
  FallbackModel,
  type FallbackOptions,
  fallback,
  fallsOver,
} from "./model/fallback.js";
export { ScriptedModel, type ScriptedTurn } from "./model/scripted.js";
export type {
  AssistantMessage,
  AudioBlock,
  ContentBlock,
  FileBlock,
  FinishReason,
  ImageBlock,
  JSONSchema,
  MediaBlock,
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
export type { AgentToolOptions } from "./run/config/agent.js";
export {
  Agent,
  type AgentConfig,
  type AgentModel,
  type AgentTools,
  Handoff,
  type HandoffArgs,
  type HandoffOptions,
  handoff,
  type ModelId,
} from "./run/config/agent.js";
export { Budget, type BudgetLimits } from "./run/config/budget.js";
export type { CompactionOptions } from "./run/config/compaction-options.js";
export { type GuardrailConfig, GuardrailTripped, guardrail } from "./run/config/guardrail.js";
export { OutputValidationError } from "./run/config/output-type.js";
export {
  type PermissionMode,
  StandardPermissions,
  type StandardPermissionsOptions,
} from "./run/config/permissions.js";
export {
  type Plugin,
  type PluginConfig,
  type PluginContext,
  PluginSetupError,
  type PluginTeardownContext,
  type PluginTools,
  plugin,
} from "./run/config/plugin.js";
export type { RunInput } from "./run/config/run-input.js";
export type { RunOptions } from "./run/config/run-options.js";
export { RECALL_TOOL_NAME, recallTool } from "./run/conversation/recall.js";
export type { AgentsByName } from "./run/durability/recover.js";
export { type LoggedResult, type OpenTurn, type RunState, replay } from "./run/durability/replay.js";
export { loadSession } from "./run/durability/resume.js";
export { getRunContext } from "./run/engine/call-scope.js";
export { RunHandle } from "./run/handle.js";
export { type DepsRequired, type ResumeOptions, type RunArgs, Runner } from "./run/runner.js";
export { Approvals } from "./run/state/approval-channel.js";
export { type ModelPrice, modelPrice, setModelPrice } from "./run/state/pricing.js";
export type { RunResult, ToolCallRecord } from "./run/state/result.js";
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
