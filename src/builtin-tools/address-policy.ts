import ipaddr from "ipaddr.js";

/**
 * Which network addresses web_fetch may connect to. By default only public unicast
 * addresses: loopback, private, link-local (where cloud metadata services live), CGNAT,
 * unique-local, multicast, reserved and documentation ranges are refused, and addresses that
 * embed an IPv4 address (IPv4-mapped, NAT64, 6to4, IPv4-compatible) are judged by the
 * address they embed, so `[::ffff:127.0.0.1]` is as loopback as `127.0.0.1`.
 */
export interface AddressPolicyOptions {
  /** Allow every address, private ones included. For intranet deployments that trust their callers. */
  allowPrivateNetwork?: boolean;
  /**
   * Hosts that may resolve to private addresses: exact names (`wiki.corp`), subdomain
   * wildcards (`*.corp`), IP literals (`127.0.0.1`, `::1`) or CIDR ranges (`10.1.0.0/16`, which
   * allow any host whose address falls inside).
   */
  allowHosts?: readonly string[];
}

/** A refused connection: which host, which address, and the kind of range it is in. */
export class BlockedAddressError extends Error {
  override name = "BlockedAddressError";
  readonly host: string;
  readonly address: string;
  readonly range: string;
  constructor(host: string, address: string, range: string) {
    const what = host === address ? address : `${host} (${address})`;
    super(`${what} is ${RANGE_WORDS[range] ?? `in a blocked range (${range})`}`);
    this.host = host;
    this.address = address;
    this.range = range;
  }
}

/** How each refused range reads in an error message. */
const RANGE_WORDS: Record<string, string> = {
  loopback: "a loopback address",
  private: "a private network address",
  linkLocal: "a link-local address (where cloud metadata services live)",
  carrierGradeNat: "a carrier-grade NAT address",
  uniqueLocal: "a private (unique local) IPv6 address",
  unspecified: "the unspecified address",
  broadcast: "the broadcast address",
  multicast: "a multicast address",
  reserved: "in a reserved range",
  benchmarking: "in the benchmarking range",
  deprecatedSiteLocal: "a site-local IPv6 address",
  teredo: "a Teredo tunnel address",
  ipv4Compatible: "an IPv4-compatible IPv6 address",
  metadata: "a cloud metadata address",
  localhostName: "a loopback name (localhost)",
  invalid: "not a valid IP address",
};

/** Public-looking addresses that are internal anyway. */
const EXTRA_BLOCKED: Array<[ipaddr.IPv4 | ipaddr.IPv6, number, string]> = [
  [ipaddr.parse("168.63.129.16"), 32, "metadata"], // Azure's wire server
  [ipaddr.parse("::"), 96, "ipv4Compatible"], // deprecated ::a.b.c.d, routed as IPv4 by some stacks
];

/**
 * The range `address` is in, when web_fetch must not connect to it; `undefined` for a
 * public unicast address.
 *
 * @example
 * blockedRange("10.0.0.7")         // → "private"
 * blockedRange("::ffff:127.0.0.1") // → "loopback"
 * blockedRange("93.184.215.14")    // → undefined
 */
export function blockedRange(address: string): string | undefined {
  let ip: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    ip = ipaddr.parse(address.replace(/^\[|\]$/g, "").replace(/%.*$/, ""));
  } catch {
    return "invalid";
  }
  ip = unwrapEmbeddedIPv4(ip);
  const range = ip.range();
  if (range !== "unicast") return range;
  for (const [net, bits, extra] of EXTRA_BLOCKED) {
    if (ip.kind() === net.kind() && ip.match(net, bits)) return extra;
  }
  return undefined;
}

/** IPv6 forms that carry an IPv4 address are judged as that IPv4 address. */
function unwrapEmbeddedIPv4(ip: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
  if (ip.kind() !== "ipv6") return ip;
  const v6 = ip as ipaddr.IPv6;
  const p = v6.parts;
  const fromWords = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  switch (v6.range()) {
    case "ipv4Mapped": // ::ffff:a.b.c.d
    case "rfc6145": // ::ffff:0:a.b.c.d
    case "rfc6052": // NAT64 64:ff9b::a.b.c.d (and the local-use 64:ff9b:1::/48)
      return fromWords(p[6]!, p[7]!);
    case "6to4": // 2002:AABB:CCDD::
      return fromWords(p[1]!, p[2]!);
    default:
      return v6;
  }
}

/** Whether `text` is an IP address literal (brackets allowed). */
export function isIpLiteral(text: string): boolean {
  return ipaddr.isValid(text.replace(/^\[|\]$/g, "")) && /^[\d.]+$|:/.test(text);
}

/** Applies `AddressPolicyOptions` to one host and the address it resolved to. */
export class AddressPolicy {
  readonly #allowAll: boolean;
  readonly #names = new Set<string>();
  readonly #suffixes: string[] = [];
  readonly #ranges: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = [];

  constructor(options: AddressPolicyOptions = {}) {
    this.#allowAll = options.allowPrivateNetwork === true;
    for (const raw of options.allowHosts ?? []) {
      const entry = normalizeHost(raw);
      if (entry.startsWith("*.")) this.#suffixes.push(entry.slice(1));
      else if (entry.includes("/") && ipaddr.isValidCIDR(entry)) this.#ranges.push(ipaddr.parseCIDR(entry));
      else if (ipaddr.isValid(entry)) this.#names.add(ipaddr.parse(entry).toString());
      else this.#names.add(entry);
    }
  }

  /** True when `host` was opened by `allowPrivateNetwork` or an `allowHosts` name. */
  allowsHost(host: string): boolean {
    if (this.#allowAll) return true;
    const name = normalizeHost(host);
    if (this.#names.has(name)) return true;
    if (ipaddr.isValid(name) && this.#names.has(ipaddr.parse(name).toString())) return true;
    return this.#suffixes.some((suffix) => name.endsWith(suffix));
  }

  /** Throws `BlockedAddressError` unless `host` may connect to `address`. */
  check(host: string, address: string): void {
    if (this.allowsHost(host)) return;
    const range = blockedRange(address);
    if (range === undefined) return;
    if (range !== "invalid" && this.#inAllowedRange(address)) return;
    throw new BlockedAddressError(normalizeHost(host), address, range);
  }

  /**
   * Refuses what can be refused before any DNS lookup: IP literals in blocked ranges and
   * `localhost` names (RFC 6761 reserves them for loopback, whatever a resolver says).
   */
  checkHostname(host: string): void {
    if (this.allowsHost(host)) return;
    const name = normalizeHost(host);
    if (isIpLiteral(name)) {
      this.check(name, name);
      return;
    }
    if (name === "localhost" || name.endsWith(".localhost")) {
      throw new BlockedAddressError(name, name, "localhostName");
    }
  }

  #inAllowedRange(address: string): boolean {
    if (this.#ranges.length === 0) return false;
    const ip = unwrapEmbeddedIPv4(ipaddr.parse(address.replace(/^\[|\]$/g, "")));
    return this.#ranges.some(([net, bits]) => ip.kind() === net.kind() && ip.match(net, bits));
  }
}

function normalizeHost(host: string): string {
  return host
    .trim()
    .toLowerCase()
    .replace(/^\[|\]$/g, "")
    .replace(/\.$/, "");
}
