import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { StandardPermissions } from "quiver-agents";
import { workspace } from "quiver-agents/workspace";
import { describe, expect, it } from "vitest";
import { decideShell, decisions, play, tempDir } from "./helpers.js";

const scratch = tempDir("quiver-effects-");
let repos = 0;

/** A git repository with a commit, a README, a would-be makefile and a would-be git config. */
function repository(): string {
  const root = join(scratch, `repo-${++repos}`);
  mkdirSync(root);
  const git = (...args: string[]) => execFileSync("git", args, { cwd: root, stdio: "ignore" });
  git("init", "-q");
  git("config", "user.email", "a@b.c");
  git("config", "user.name", "a");
  writeFileSync(join(root, "README.md"), "hello\n");
  git("add", "README.md");
  git("commit", "-qm", "init");
  writeFileSync(join(root, "notes.txt"), "$(shell touch PWNED)\nall:\n\t@true\n");
  writeFileSync(join(root, "cfg.txt"), "[core]fsmonitor = touch PWNED\n");
  return root;
}

/**
 * Runs the commands for real (bash, git, the sandbox when bwrap is here) in the default mode
 * with these allow rules, and an approver that says no. What asked, with the reasons.
 */
async function attempt(root: string, allow: string[], commands: string[]): Promise<string[]> {
  const ws = workspace({ root, shell: { allow } });
  const reasons: string[] = [];
  await play(
    ws.tools,
    commands.map((command) => ({ name: "shell", args: { command } })),
    { permissions: new StandardPermissions({ mode: "default" }) },
    (ev) => {
      if (ev.type !== "approval_required") return;
      reasons.push(ev.reason ?? "");
      ev.reject("no");
    },
  );
  return reasons;
}

describe("an allow prefix does not vouch for options that write files or run programs", () => {
  it("git diff --output cannot plant core.fsmonitor for the allowed git status (audit 2, finding 1)", async () => {
    const root = repository();
    const outside = join(scratch, `escaped-${repos}`);
    const hook = `echo ran >> PWNED; date > ${outside}`;
    const config = readFileSync(join(root, ".git/config"), "utf8");
    const asked = await attempt(
      root,
      ["git status", "git diff", "ls"],
      [
        `git diff --no-index --name-only '--line-prefix=[core]fsmonitor="${hook}";' --output=.git/config /dev/null README.md`,
        "git status --short",
        "git diff",
      ],
    );
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('"--output=.git/config" makes git write a file');
    expect(readFileSync(join(root, ".git/config"), "utf8")).toBe(config);
    // What the developer's own git does later, outside any sandbox.
    execFileSync("git", ["status", "--short"], { cwd: root, stdio: "ignore" });
    expect(existsSync(join(root, "PWNED"))).toBe(false);
    expect(existsSync(outside)).toBe(false);
  });

  const repros: Array<{ allow: string; commands: string[]; reason: string }> = [
    {
      allow: "git grep",
      commands: ["git grep --open-files-in-pager='touch PWNED; true' hello"],
      reason: "makes git run a program",
    },
    { allow: "sed -n", commands: ["sed -n '1e touch PWNED' README.md"], reason: "e command runs" },
    {
      allow: "make -n",
      commands: ["make -n -f notes.txt"],
      reason: '"-f" makes make run commands from outside the project\'s makefiles',
    },
    {
      allow: "sort",
      commands: ["sort -o .git/config cfg.txt", "git status"],
      reason: '"-o" makes sort write a file',
    },
    {
      allow: "uniq",
      commands: ["uniq cfg.txt .git/config", "git status"],
      reason: 'uniq writes its second file operand (".git/config")',
    },
    {
      allow: "git log",
      commands: ["git log -1 '--format=[core]%n fsmonitor = touch PWNED' --output=.git/config", "git status"],
      reason: '"--output=.git/config" makes git write a file',
    },
  ];
  for (const { allow, commands, reason } of repros) {
    it(`allow ${JSON.stringify(allow)}: ${commands[0]} asks and runs nothing`, async () => {
      const root = repository();
      const asked = await attempt(root, [allow, "git status"], commands);
      expect(asked).toHaveLength(1);
      expect(asked[0]).toContain(reason);
      expect(existsSync(join(root, "PWNED"))).toBe(false);
      expect(readFileSync(join(root, ".git/config"), "utf8")).not.toContain("fsmonitor");
    });
  }

  it("each program's writing and running forms ask, naming what stood in the way", async () => {
    const table: Record<string, string> = {
      "git diff --output=x": '"--output=x" makes git write a file',
      "git diff --output x": '"--output" makes git write a file',
      "git log --outp=x": "makes git write a file",
      "git diff --ext-diff": '"--ext-diff" makes git run a program',
      "git diff --textconv": '"--textconv" makes git run a program',
      "git grep -O hello": "makes git grep run a program",
      "git grep -nOvim hello": "makes git grep run a program",
      "git grep --open=vim hello": "makes git run a program",
      "git -c core.pager=sh status": "sets git configuration",
      "git --config-env=core.fsmonitor=X status": "sets git configuration",
      "git --exec-path=. status": '"--exec-path=." makes git run a program',
      "git -C sub status": "points git at another repository",
      "git --git-dir=elsewhere status": "points git at another repository",
      "git --work-tree=.. status": "points git at another repository",
      "git log --upload-pack=x": "makes git run a program",
      "git archive -o out.tar HEAD": "makes git archive write a file",
      "git format-patch -o patches HEAD~1": "makes git format-patch write a file",
      "git rebase -x 'make' HEAD~1": "makes git rebase run a program",
      "git bisect run ./t.sh": "git bisect run runs a program",
      "sed -i s/a/b/ README.md": "edit files in place",
      "sed -ni.bak p README.md": "edit files in place",
      "sed --in-place s/a/b/ README.md": '"--in-place" makes sed write a file',
      "sed --in=x s/a/b/ README.md": "makes sed write a file",
      "sed -n 's/a/b/e' README.md": "s///e flag",
      "sed -n 's/a/b/w out' README.md": "s///w flag",
      "sed -n 's|a|b|gw out' README.md": "s///w flag",
      "sed -n '1w out' README.md": "w command writes a file",
      "sed -n '/x/W out' README.md": "W command writes a file",
      "sed -n -e p -e '1e id' README.md": "e command runs",
      "sed -n -e '$!{p;e id' -e '}' README.md": "e command runs",
      "sed -n '1b end; e id' README.md": "e command runs",
      "sed -f script.sed README.md": "read its script from a file",
      "sed --expression='1 e id' README.md": "e command runs",
      "sed 'k' README.md": "cannot read the sed script",
      "sort -o out cfg.txt": '"-o" makes sort write a file',
      "sort -nrocfg out": '"-nrocfg" makes sort write a file',
      "sort --output=out cfg.txt": "makes sort write a file",
      "sort --out=out cfg.txt": "makes sort write a file",
      "sort --compress-program=sh cfg.txt": "makes sort run a program",
      "uniq -c cfg.txt out": 'uniq writes its second file operand ("out")',
      "uniq -f 1 a b": 'second file operand ("b")',
      "make -f notes.txt": '"-f" makes make run commands from outside',
      "make -n --file=notes.txt": "makes make run commands from outside",
      "make -C /tmp/elsewhere": '"-C" makes make run commands from outside',
      "make --eval='x: ; id'": "makes make run commands from outside",
      "make SHELL=/tmp/evil test": '"SHELL=/tmp/evil" makes make run commands from outside',
      "make -ke all": '"-ke" makes make run commands from outside',
      "make -I inc all": '"-I" makes make run commands from outside',
      "find . -exec id ;": '"-exec" makes find run a program',
      "find . -execdir id {} +": "makes find run a program",
      "find . -ok id ;": "makes find run a program",
      "find . -okdir id ;": "makes find run a program",
      "find . -name x -delete": "makes find delete files",
      "find . -fprint out": '"-fprint" makes find write a file',
      "find . -fprint0 out": "makes find write a file",
      "find . -fprintf out %p": "makes find write a file",
      "find . -fls out": "makes find write a file",
      "rg --pre ./x hello": '"--pre" makes rg run a program',
      "rg --pre=./x hello": "makes rg run a program",
      "rg --hostname-bin=./x hello": "makes rg run a program",
      "awk 'BEGIN { system(\"id\") }'": "calls system()",
      "awk '{ print | \"sh\" }' README.md": "uses a pipe",
      "awk 'BEGIN { \"id\" | getline x }'": "uses a pipe",
      "awk '{ print > \"out\" }' README.md": "print to a file",
      'awk \'{ printf "%s", $0 >> "out" }\' README.md': "print to a file",
      "awk -f prog.awk README.md": 'awk\'s option "-f"',
      "gawk -o out 1 README.md": 'awk\'s option "-o"',
      "gawk -l filefuncs 1": 'awk\'s option "-l"',
      'awk \'BEGIN { f = "system"; @f("id") }\'': "uses @",
      "tee out": 'tee writes its file operands ("out")',
      "tee -a out": "tee writes its file operands",
      xargs: "xargs runs a command",
      "xargs grep x": "xargs runs a command",
      "env sh -c id": 'env runs "sh"',
      "env -S 'sh -c id'": "makes env run a command line",
      "timeout 5 git diff --output=x": '"--output=x" makes git write a file',
      "nice -n 5 sort -o x cfg.txt": "makes sort write a file",
      "/usr/bin/git diff --output=x": "makes git write a file",
      "git diff *": "could expand to an option of git",
      "sed -n 1p *.md": "could expand to an option of sed",
      "sort {-o,x} cfg.txt": "could expand to an option of sort",
    };
    const allow = [
      ...["git", "sed", "sort", "uniq", "make", "find", "rg", "awk", "gawk", "tee", "xargs", "env"],
      ...["timeout 5 git diff", "nice -n 5 sort", "/usr/bin/git diff"],
    ];
    const verdicts = await decideShell(scratch, Object.keys(table), { allow });
    for (const verdict of verdicts) {
      expect(verdict.decision, verdict.command).toBe("ask");
      expect(verdict.reason, verdict.command).toContain(table[verdict.command]);
      expect(verdict.reason, verdict.command).toContain("no allow rule can vouch for this command");
    }
  });

  it("the harmless forms of the same programs still run without asking", async () => {
    const harmless = [
      "git diff",
      "git diff --stat",
      "git diff --text HEAD",
      "git diff --output-indicator-new=+ HEAD",
      "git diff -- --output=x",
      "git status -s",
      "git status -uno",
      "git log --oneline -n 5",
      "git log -Sfoo",
      "git grep -o -n hello",
      "git show HEAD --name-only",
      "sort cfg.txt",
      "sort -n -k 2 cfg.txt",
      "sort -t, -k2 -u cfg.txt",
      "sed -n 1,5p README.md",
      "sed -n '/e/p' README.md",
      "sed 's/hello/world/g' README.md",
      "sed -n '/error/{p;q}' README.md",
      "sed -e 's/a/b/' -e '1a text with e and w' README.md",
      "sed -n 'p # e id' README.md",
      "sed -E 's|/usr/w|x|' README.md",
      "uniq cfg.txt",
      "uniq -c cfg.txt",
      "uniq cfg.txt /dev/null",
      "find . -name x",
      "find . -type f -name '*.ts' -print",
      "rg hello",
      "rg --pre-glob '*.gz' hello",
      "awk '{ print $1 }' README.md",
      "awk -F: '$3 > 100 { print $1 }' README.md",
      "awk 'NR > 1 && $2 >= 3 || $1 == \"x\" { print }' README.md",
      "tee",
      "tee /dev/null",
      "env",
      "env -u HOME",
      "ls *.md",
      "make",
      "make test",
      "make -j4 -k build",
      "make -n all",
    ];
    const allow = ["git", "sed", "sort", "uniq", "find", "rg", "awk", "tee", "env", "ls", "make"];
    expect(decisions(await decideShell(scratch, harmless, { allow }))).toEqual(
      Object.fromEntries(harmless.map((c) => [c, "allow"])),
    );
  });
});
