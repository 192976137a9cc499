/**
 * The agent card as A2A 0.3 clients read it, with the 1.0 card's fields kept beside: the
 * "superset" card the A2A SDK's own servers send to a client that does not ask for 1.0. A 0.3
 * client finds `url`, `preferredTransport` and `protocolVersion` (and its shape of the security
 * scheme); a 1.0 client sees `supportedInterfaces` and reads the rest as 1.0.
 */

/** The 1.0 card as JSON (`AgentCard.toJSON`), as far as the 0.3 shape needs it. */
type CardJson = {
  url?: never;
  supportedInterfaces?: Array<{ url: string; protocolBinding: string; protocolVersion?: string }>;
  capabilities?: { streaming?: boolean; pushNotifications?: boolean };
  securitySchemes?: Record<string, { httpAuthSecurityScheme?: { scheme?: string; description?: string } }>;
  securityRequirements?: Array<{ schemes?: Record<string, unknown> }>;
  skills?: Array<{ id: string; name: string; description: string; tags?: string[]; examples?: string[] }>;
  [field: string]: unknown;
};

/**
 * `card` (1.0 JSON) with the 0.3 fields added: the endpoint of its first 0.3 interface, 0.3's
 * form of each HTTP auth scheme (the 1.0 form stays inside it), `security`, and skills with the
 * `tags` 0.3 requires.
 *
 * @example
 * legacyCard(AgentCard.toJSON(card)).url; // "http://127.0.0.1:3000/a2a"
 */
export function legacyCard(json: Record<string, unknown>): Record<string, unknown> {
  const card = json as CardJson;
  const interfaces = card.supportedInterfaces ?? [];
  const primary = interfaces.find((i) => i.protocolVersion?.startsWith("0.")) ?? interfaces[0];
  const schemes = Object.entries(card.securitySchemes ?? {});
  return {
    ...card,
    ...(primary && { url: primary.url, preferredTransport: primary.protocolBinding }),
    protocolVersion: "0.3.0",
    capabilities: {
      streaming: card.capabilities?.streaming ?? false,
      pushNotifications: card.capabilities?.pushNotifications ?? false,
    },
    skills: (card.skills ?? []).map((skill) => ({ ...skill, tags: skill.tags ?? [] })),
    ...(schemes.length > 0 && {
      securitySchemes: Object.fromEntries(
        schemes.map(([name, scheme]) => [
          name,
          scheme.httpAuthSecurityScheme
            ? {
                type: "http",
                scheme: scheme.httpAuthSecurityScheme.scheme?.toLowerCase() ?? "bearer",
                ...(scheme.httpAuthSecurityScheme.description && {
                  description: scheme.httpAuthSecurityScheme.description,
                }),
                ...scheme,
              }
            : scheme,
        ]),
      ),
      security: (card.securityRequirements ?? []).map((requirement) =>
        Object.fromEntries(Object.keys(requirement.schemes ?? {}).map((name) => [name, []])),
      ),
    }),
  };
}
