import { existsSync } from "node:fs";
import { join } from "node:path";
import { type Permissions, StandardPermissions } from "quiver-agents";
import type { ShellOptions } from "quiver-agents/workspace";
import { describe, expect, it } from "vitest";
import { decideShell, decisions, tempDir } from "./helpers.js";

const root = tempDir("quiver-rules-");

const decide = (commands: string[], rules: Pick<ShellOptions, "allow" | "deny">, permissions?: Permissions) =>
  decideShell(root, commands, rules, permissions);

const ALLOW = ["ls", "echo", "cat", "grep", "git status", "git log", "npm test"];

describe("shell allow rules, decided from a Bash parse", () => {
  it("the issue's probes ask: ANSI-C quoting and >&word are not read as harmless", async () => {
    const probes = [`ls $'\\'' ; touch P ; echo $'\\''`, "ls >&P"];
    const verdicts = await decide(probes, { allow: ["ls", "echo"] });
    expect(decisions(verdicts)).toEqual({ [probes[0]!]: "ask", [probes[1]!]: "ask" });
    expect(verdicts[0]!.reason).toContain("ANSI-C string");
    expect(verdicts[1]!.reason).toContain('redirects to or from a file (">&P")');
    expect(existsSync(join(root, "P"))).toBe(false);
  });

  it("ordinary allowed commands still run without asking", async () => {
    const plain = [
      "git status -s",
      "ls -la | grep x",
      "npm test 2>&1",
      "git log --oneline > /dev/null",
      "'ls' \"-la\"",
      "ls *.md 2>/dev/null",
      "git status; ls && echo done || echo failed",
      "ls # a comment",
      "git status\n",
      'echo "a \\"quoted\\" word" >&2',
      "ls &>/dev/null",
    ];
    expect(decisions(await decide(plain, { allow: ALLOW }))).toEqual(
      Object.fromEntries(plain.map((c) => [c, "allow"])),
    );
  });

  it("a very long chain of allowed commands is decided, not crashed on", async () => {
    // `a && b && …` nests one level per operator: a recursive walk overflowed the stack here.
    // (Just under the 65,536 characters the rules read: 3,400 levels of nesting.)
    const long = `${"ls -la | grep x && ".repeat(3_400)}ls`;
    const [verdict] = await decide([long], { allow: ALLOW, deny: ["rm -rf"] });
    expect(verdict!.decision).toBe("allow");
  });

  it("anything the parse cannot prove plain asks, with a reason", async () => {
    const table: Record<string, string> = {
      "echo $HOME": "parameter expansion",
      "echo ${HOME}": "parameter expansion",
      'echo "$HOME"': "parameter expansion",
      "echo $(touch x)": "command substitution",
      "echo `touch x`": "command substitution",
      "cat <(touch x)": "process substitution",
      "echo $((1+2))": "arithmetic expansion",
      "echo $'a'": "ANSI-C string",
      'echo $"a"': "bare $",
      "FOO=1 ls": "variable assignment",
      "ls &": "background job",
      "(ls)": "subshell",
      "{ ls; }": "command group",
      "! ls": "negation",
      "cat <<EOF\nx\nEOF": "here-document",
      "cat <<< x": "here-string",
      "ls > out.txt": "redirects to or from a file",
      "ls >> out.txt": "redirects to or from a file",
      "ls 2> err.txt": "redirects to or from a file",
      "ls &> out.txt": "redirects to or from a file",
      "cat < notes.md": "redirects to or from a file",
      "ls >&-": "redirects to or from a file",
      "for f in a; do ls; done": "for statement",
      "if ls; then ls; fi": "if statement",
      "l? -la": "no allow rule covers",
      "{ls,x}": "does not parse",
      "l{s,} x": "no allow rule covers",
      "~/bin/ls": "no allow rule covers",
      "git statusx": "no allow rule covers",
      "git status; touch x": 'shell runs "touch x"',
      "ls\r": "skipped",
      "ls\u00a0-la": "no allow rule covers",
      "ls 'unterminated": "does not parse",
      "ls ;; touch x": '";;"',
      "export X=1": "declaration",
      // The grammar reads these as one ls; Bash runs touch and sh, and lsof.
      "ls\n\\touch pwned\n\\sh -c 'id > id.txt'": "several lines",
      "git status\n\\sh -c 'id'": "several lines",
      'ls""\\\nof': "several lines",
      "ls \\\n  -la": "several lines",
      "ls # a comment\n\ncat notes.md |& grep x": "several lines",
    };
    const verdicts = await decide(Object.keys(table), { allow: ALLOW });
    for (const verdict of verdicts) {
      expect(verdict.decision, verdict.command).toBe("ask");
      expect(verdict.reason, verdict.command).toContain(table[verdict.command]);
    }
  });
});

describe("shell deny rules look through wrappers and spellings", () => {
  const evasions = [
    "\\rm -rf x",
    "rm -fr x",
    "rm -r -f x",
    "rm -Rf x",
    "rm --recursive --force x",
    "/bin/rm -rf x",
    '"rm" -rf x',
    "r\\m -rf x",
    "$'\\x72m' -rf x",
    "( rm -rf x )",
    "{ rm -rf x; }",
    "bash -c 'rm -rf x'",
    'sh -c "rm -rf x"',
    "bash -lc 'rm -rf x'",
    "bash -c \"bash -c 'rm -rf x'\"",
    "eval 'rm -rf x'",
    "eval rm -rf x",
    "echo x | xargs rm -rf",
    "xargs -0 rm -rf < /dev/null",
    "env rm -rf x",
    "env -i PATH=/bin rm -rf x",
    "env -S 'rm -rf x'",
    "sudo rm -rf x",
    "sudo -u root rm -rf x",
    "command rm -rf x",
    "exec rm -rf x",
    "nohup rm -rf x",
    "time rm -rf x",
    "nice -n 5 rm -rf x",
    "timeout 5 rm -rf x",
    "setsid rm -rf x",
    "find . -exec rm -rf {} +",
    "FOO=1 rm -rf x",
    "if true; then rm -rf x; fi",
    "f() { rm -rf x; }; f",
    "echo $(rm -rf x)",
    "echo `rm -rf x`",
    "cat <(rm -rf x)",
    "ls && rm -rf x",
    "cat <<EOF\n$(rm -rf x)\nEOF",
    "watch 'rm -rf x'",
    "su -c 'rm -rf x'",
    "rm -rf x; (",
    "git -C repo push",
    "git push --force origin main",
    "sudo git push",
  ];

  it("each of these is refused in default mode, without asking", async () => {
    const verdicts = await decide(evasions, { allow: ["ls", "echo"], deny: ["rm -rf", "git push"] });
    expect(decisions(verdicts)).toEqual(Object.fromEntries(evasions.map((c) => [c, "deny"])));
  });

  it("bypass mode refuses them too, and a custom Permissions that allows everything is refused at execute time", async () => {
    const sample = ["\\rm -rf x", "bash -c 'rm -rf x'", "echo x | xargs rm -rf", "git -C repo push"];
    const bypass = await decide(
      sample,
      { deny: ["rm -rf", "git push"] },
      new StandardPermissions({ mode: "bypass" }),
    );
    expect(decisions(bypass)).toEqual(Object.fromEntries(sample.map((c) => [c, "deny"])));
    const lenient: Permissions = { check: () => ({ behavior: "allow" }) };
    const executed = await decide(sample, { deny: ["rm -rf", "git push"] }, lenient);
    expect(decisions(executed)).toEqual(Object.fromEntries(sample.map((c) => [c, "deny"])));
    for (const verdict of executed) expect(verdict.reason).toContain("refused:");
  });

  it("commands that only resemble a denied one are not refused", async () => {
    const near = [
      "rm -r x",
      "rm x",
      "git log --grep push",
      "git status",
      "echo 'rm -rf is dangerous'",
      "ls rm",
    ];
    const verdicts = await decide(near, { allow: ALLOW, deny: ["rm -rf", "git push"] });
    expect(decisions(verdicts)).toEqual({
      "rm -r x": "ask",
      "rm x": "ask",
      "git log --grep push": "allow",
      "git status": "allow",
      "echo 'rm -rf is dangerous'": "allow",
      "ls rm": "allow",
    });
  });
});

describe("the rules' work is bounded (security audit 2, finding 4)", () => {
  it("long lines full of a denied program's name are decided in linear time, and still match", async () => {
    // Quadratic before: a 30 KB `echo rm rm …` held the event loop for 26 s, 60 KB for minutes.
    const words = " rm".repeat(20_000);
    const options = " -x git".repeat(8_000);
    const lines = [
      `echo${words}`,
      `echo${words}; rm -rf x`,
      `git${options} status`,
      `git${options} push`,
      `bash -c 'echo${words.slice(0, 30_000)}'`,
    ];
    const started = Date.now();
    const verdicts = await decide(lines, { allow: ["echo", "git status"], deny: ["rm -rf", "git push"] });
    const took = Date.now() - started;
    expect(verdicts.map((v) => v.decision)).toEqual(["allow", "deny", "ask", "deny", "ask"]);
    expect(verdicts[1]!.reason).toContain('matches the deny rule "rm -rf"');
    expect(verdicts[3]!.reason).toContain('matches the deny rule "git push"');
    // Generous for a loaded 2-core machine: what it proves is that nothing hung.
    expect(took).toBeLessThan(8_000);
  }, 30_000);

  it("a command longer than the rules read asks, or is refused where deny rules hold", async () => {
    const huge = `echo${" rm".repeat(70_000)}`; // 210 KB
    const started = Date.now();
    const [asked] = await decide([huge], { allow: ["echo"] });
    const [refused] = await decide([huge], { deny: ["rm -rf"] }, new StandardPermissions({ mode: "bypass" }));
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(asked!.decision).toBe("ask");
    expect(asked!.reason).toContain("more than the 65,536 the shell's rules read");
    expect(refused!.decision).toBe("deny");
    expect(refused!.reason).toContain("its deny rules cannot be checked");
  }, 30_000);

  it("a line that hands more command lines to shells than the rules read is refused, not read in part", async () => {
    const padding = Array.from({ length: 32 }, (_, i) => `bash -c 'echo ${i}'`).join("; ");
    const line = `${padding}; bash -c 'rm -rf x'`;
    const [verdict] = await decide([line], { deny: ["rm -rf"] }, new StandardPermissions({ mode: "bypass" }));
    expect(verdict!.decision).toBe("deny");
    expect(verdict!.reason).toContain("more than 32 command lines");
  });
});
