/**
 * Warnings a provider reports without failing the request: a setting the API does not have,
 * a tool schema it cannot express exactly and had to simplify.
 */

export type ProviderWarning = {
  /** The provider that degraded something (`"openai"`, `"anthropic"`…). */
  provider: string;
  message: string;
  /** The tool whose schema was simplified, when the warning is about one. */
  tool?: string;
};

export type WarningHandler = (warning: ProviderWarning) => void;

/**
 * Without an `onWarning` option, warnings go to Node's own warning channel (printed once per
 * message to stderr, observable with `process.on("warning")`).
 */
const reported = new Set<string>();
export const defaultWarningHandler: WarningHandler = (warning) => {
  const text = `${warning.provider}: ${warning.message}`;
  if (reported.has(text)) return;
  if (reported.size >= 1000) reported.clear();
  reported.add(text);
  process.emitWarning(text, { type: "QuiverProviderWarning" });
};
