import type { ContentBlock, FinishReason, Usage } from "../../model/types.js";

/**
 * A requested call as the model sent it, before the runner gives it a run-unique id. Its
 * fields are always present (`undefined` when unknown): one shape for every call.
 */
export type RawCall = {
  providerId: string | undefined;
  /** The run-unique id claimed when the call's first argument delta streamed. */
  claimedId: string | undefined;
  name: string;
  args: string;
  repairs: string[] | undefined;
};

/** One model turn, assembled from its stream. */
export type ModelTurn = {
  text: string;
  reasoning: ContentBlock[];
  calls: RawCall[];
  usage: Partial<Usage>;
  finish: FinishReason;
  providerData: Record<string, unknown> | undefined;
  /** The model that answered, when a fallback chain moved past the one asked first. */
  model: string | undefined;
};
