import type { AgentCard, AgentSkill } from "@a2a-js/sdk";
import type { Hono } from "hono";
import { type Agent, Tool, UserError } from "../index.js";
import { A2aFailures } from "./a2a-failures.js";
import { legacyCard } from "./a2a-legacy-card.js";
import type { PushNotifications } from "./a2a-push.js";
import type { A2aPushOptions } from "./a2a-push-options.js";
import { type A2aSdk, loadA2aSdk } from "./a2a-sdk.js";
import { A2aTasks } from "./a2a-tasks.js";
import type { Caller } from "./auth.js";
import { HttpError, MAX_MESSAGE_BODY_BYTES, pullResponse, readJsonObject, SSE_HEADERS } from "./http.js";
import type { RunRegistry } from "./runs.js";
import type { ServerErrorHandler } from "./server-errors.js";

/** `createServer({ a2a })`: what the agent card says besides what the server knows. */
export type A2aOptions = {
  /** The card's description. Default: one naming the agent. */
  description?: string;
  /** The agent's version on the card. Default "1.0.0". */
  version?: string;
  /**
   * Declare HTTP Bearer auth on the card. Default: when `auth` is a token. Set it when an `auth`
   * function reads a bearer token too, so clients know to send one.
   */
  bearer?: boolean;
  /**
   * Push notifications: clients register webhooks that each change of a task's state is POSTed
   * to. Off by default. `true` allows webhooks on public addresses only; an object also allows
   * private ones (`allowPrivateNetwork`, `allowHosts`) and sets the delivery's `timeoutMs` and
   * `attempts`.
   */
  push?: boolean | A2aPushOptions;
};

/** Where the JSON-RPC endpoint is (the card names it with the server's own origin). */
export const A2A_PATH = "/a2a";

type Mount = {
  registry: RunRegistry;
  agent: Agent<any, any>;
  agentKey: string;
  caller: (request: Request, env: unknown) => Promise<Caller>;
  /** How the server authenticates: nothing (loopback only), a token, or a function. */
  auth: "none" | "token" | "function";
  options: A2aOptions;
  /** Where a failure the client is not told about goes (the server's `onError`). */
  onError: ServerErrorHandler | undefined;
};

/**
 * Serves the agent over A2A: its card at `/.well-known/agent-card.json` and JSON-RPC at
 * `POST /a2a`, both A2A 1.0 methods (`SendMessage`, `SendStreamingMessage`, `GetTask`,
 * `CancelTask`, `SubscribeToTask`) and, for clients on 0.3, `message/send`, `message/stream`,
 * `tasks/get`, `tasks/cancel`, `tasks/resubscribe` — chosen by the `A2A-Version` header as the
 * SDK's own servers do. The SDK loads on the first request.
 */
export function mountA2a(app: Hono, mount: Mount): void {
  const { push } = mount.options;
  // Loaded with the first A2A request, as the SDK is: `import "quiver-agents/server"` stays lean.
  let pushing: Promise<PushNotifications> | undefined;
  const pushes = (): Promise<PushNotifications> | undefined => {
    if (!push) return undefined;
    pushing ??= import("./a2a-push.js").then((m) => new m.PushNotifications(push === true ? {} : push));
    return pushing;
  };
  const sdk = async (): Promise<A2aSdk> => {
    try {
      return await loadA2aSdk();
    } catch (error) {
      if (error instanceof UserError) throw new HttpError(501, "not_installed", error.message);
      throw error;
    }
  };

  app.get("/.well-known/agent-card.json", async (c) => {
    // The card is how a client learns to authenticate, so it is public behind auth; without
    // auth the server answers only on loopback, the card included.
    if (mount.auth === "none") await mount.caller(c.req.raw, c.env);
    const loaded = await sdk();
    const card = loaded.core.AgentCard.toJSON(agentCard(loaded, mount, originOf(c.req.raw))) as Record<
      string,
      unknown
    >;
    // As the SDK's own servers do: a client that asks for 1.0 gets the 1.0 card; any other (0.3
    // clients send no version) the 0.3 card with the 1.0 fields beside, which 1.0 clients read as 1.0.
    const requested = c.req.header(loaded.core.A2A_VERSION_HEADER);
    const body = requested && !requested.startsWith("0.") ? card : legacyCard(card);
    return c.json(body, 200, { "cache-control": "no-cache", vary: loaded.core.A2A_VERSION_HEADER });
  });

  app.post(A2A_PATH, async (c) => {
    const { userId } = await mount.caller(c.req.raw, c.env);
    // message/send and message/stream start runs, with files as bytes: the limit of a message.
    const body = await readJsonObject(c.req.raw, MAX_MESSAGE_BODY_BYTES);
    const loaded = await sdk();
    const { server, legacy, core } = loaded;
    const requested = c.req.header(core.A2A_VERSION_HEADER) || undefined;
    const useLegacy = (requested ?? "0.3") === "0.3";
    const card = agentCard(loaded, mount, originOf(c.req.raw));
    // No failure's own text reaches the caller; the operator hears of it (see A2aFailures).
    const failures = new A2aFailures(loaded, c.req.raw, mount.onError);
    const tasks = failures.guard(
      new A2aTasks(loaded, mount.registry, userId, mount.agentKey, card, await pushes()),
    );
    const mapError = useLegacy
      ? legacy.LegacyJsonRpcTransportHandler.mapToLegacyJSONRPCError
      : server.JsonRpcTransportHandler.mapToJSONRPCError;
    const toError = (error: unknown) => failures.rpcError(error, mapError);
    const plain = (answer: object) =>
      c.json(failures.answer(answer), 200, failures.reported ? { "x-request-id": failures.requestId } : {});
    const id = (body as { id?: unknown }).id ?? null;
    try {
      const context = server.defaultServerCallContextBuilder({
        extensions: undefined,
        user: { isAuthenticated: userId !== undefined, userName: userId ?? "" },
        headers: {},
        ...(requested !== undefined && { requestedVersion: requested }),
      });
      server.validateVersion(context.requestedVersion, card, "JSONRPC");
      const transport = useLegacy
        ? new legacy.LegacyJsonRpcTransportHandler(tasks)
        : new server.JsonRpcTransportHandler(tasks);
      const answer = await transport.handle(body, context);
      if (!(Symbol.asyncIterator in answer)) return plain(answer);
      const iterator = answer[Symbol.asyncIterator]();
      let first: IteratorResult<unknown>;
      try {
        first = await iterator.next();
      } catch (error) {
        // Refused before anything streamed (an unknown task, bad params): a plain JSON-RPC error.
        return plain({ jsonrpc: "2.0", id, error: toError(error) });
      }
      let pending: IteratorResult<unknown> | undefined = first;
      return pullResponse(async (signal) => {
        if (signal.aborted) return null;
        try {
          const step = pending ?? (await iterator.next());
          pending = undefined;
          return step.done ? null : `data: ${JSON.stringify(step.value)}\n\n`;
        } catch (error) {
          return `event: error\ndata: ${JSON.stringify({ jsonrpc: "2.0", id, error: toError(error) })}\n\n`;
        }
      }, SSE_HEADERS);
    } catch (error) {
      return plain({ jsonrpc: "2.0", id, error: toError(error) });
    }
  });
}

/** The card: the agent, its tools as skills, streaming, and how to authenticate. */
function agentCard(sdk: A2aSdk, mount: Mount, origin: string): AgentCard {
  const url = `${origin}${A2A_PATH}`;
  const bearer = mount.options.bearer ?? mount.auth === "token";
  return {
    name: mount.agent.name,
    description: mount.options.description ?? `The Quiver agent "${mount.agent.name}".`,
    supportedInterfaces: [
      { url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: sdk.core.A2A_PROTOCOL_VERSION },
      { url, protocolBinding: "JSONRPC", tenant: "", protocolVersion: "0.3" },
    ],
    provider: undefined,
    version: mount.options.version ?? "1.0.0",
    capabilities: {
      streaming: true,
      pushNotifications: Boolean(mount.options.push),
      extensions: [],
      extendedAgentCard: false,
    },
    securitySchemes: bearer
      ? {
          bearer: {
            scheme: {
              $case: "httpAuthSecurityScheme",
              value: { description: "Authorization: Bearer <token>", scheme: "Bearer", bearerFormat: "" },
            },
          },
        }
      : {},
    securityRequirements: bearer ? [{ schemes: { bearer: { list: [] } } }] : [],
    // Files become image and document parts (providers refuse what their model cannot read).
    defaultInputModes: ["text/plain", "image/*", "application/pdf"],
    defaultOutputModes: ["text/plain"],
    skills: skillsOf(mount.agent),
    signatures: [],
  };
}

/** The agent's tools as skills (tools of MCP servers and other hosts are known only once connected). */
function skillsOf(agent: Agent<any, any>): AgentSkill[] {
  const given = agent.config.tools;
  const tools = (given === undefined ? [] : Array.isArray(given) ? given : [given]).filter(
    (t): t is Tool<any, any> => t instanceof Tool,
  );
  const skill = (id: string, name: string, description: string): AgentSkill => ({
    id,
    name,
    description,
    tags: [],
    examples: [],
    inputModes: [],
    outputModes: [],
    securityRequirements: [],
  });
  if (tools.length === 0) return [skill(agent.name, agent.name, `Talk to ${agent.name}.`)];
  return tools.map((t) => skill(t.name, t.label ?? t.name, t.description));
}

/** The origin the request was made to (its Host, and the scheme a proxy reports). */
function originOf(request: Request): string {
  const url = new URL(request.url);
  const forwarded = request.headers.get("x-forwarded-proto")?.split(",")[0]?.trim().toLowerCase();
  const scheme = forwarded === "http" || forwarded === "https" ? forwarded : url.protocol.slice(0, -1);
  return `${scheme}://${request.headers.get("host") ?? url.host}`;
}
