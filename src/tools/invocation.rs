//! What an "always allow" for a shell command may cover: a *plain invocation*, one program run
//! with literal arguments and nothing else. The rule is deliberately narrow, because the user
//! who allows `ls` always has allowed `ls`, not `PATH=/tmp/evil:$PATH ls`, not `ls > ../file`,
//! not `find . -exec …`. Whatever this reader cannot show to be plain gets no key, so it asks
//! every time.

use super::shell_words::command_programs;

/// A command line as the policy sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandShape {
    /// Every program the line may run, best effort (for "reject always").
    pub programs: Vec<String>,
    /// The "allow always" key of a plain invocation (`ls`, `git status`); `None` otherwise.
    pub invocation: Option<String>,
}

impl CommandShape {
    pub fn of(command: &str) -> Self {
        Self {
            programs: command_programs(command),
            invocation: plain_invocation(command),
        }
    }
}

/// Characters that, unquoted, make a line more than one program with literal arguments:
/// lists, pipes, redirections, substitutions, expansions, escapes, comments, subshells,
/// brace groups, history expansion.
const SHELL_SYNTAX: &[char] = &[
    ';', '&', '|', '<', '>', '(', ')', '{', '}', '`', '$', '\\', '#', '!',
];

/// Characters that still expand inside double quotes.
const EXPANDS_IN_DOUBLE_QUOTES: &[char] = &['`', '$', '\\', '!'];

/// Programs that run code given to them (as arguments, files or input): allowing one always
/// would allow anything.
const RUNS_OTHER_CODE: &[&str] = &[
    "sh",
    "bash",
    "zsh",
    "dash",
    "fish",
    "ksh",
    "csh",
    "tcsh",
    "eval",
    "exec",
    "source",
    ".",
    "xargs",
    "sudo",
    "doas",
    "su",
    "pkexec",
    "runuser",
    "env",
    "nohup",
    "timeout",
    "nice",
    "ionice",
    "time",
    "command",
    "builtin",
    "parallel",
    "watch",
    "script",
    "ssh",
    "chroot",
    "setsid",
    "stdbuf",
    "unshare",
    "flock",
    "strace",
    "ltrace",
    "gdb",
    "valgrind",
    "busybox",
    "python",
    "python2",
    "python3",
    "perl",
    "ruby",
    "node",
    "deno",
    "bun",
    "php",
    "lua",
    "awk",
    "gawk",
    "mawk",
    "nawk",
    "sed",
    "tclsh",
    "Rscript",
    "osascript",
    "expect",
    "trap",
    "alias",
];

/// Programs whose first argument is a subcommand with its own meaning: allowing `git status`
/// must not allow `git push`, so the key is program and subcommand.
const SUBCOMMAND_PROGRAMS: &[&str] = &[
    "git",
    "cargo",
    "npm",
    "pnpm",
    "yarn",
    "go",
    "docker",
    "podman",
    "kubectl",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "apt",
    "apt-get",
    "brew",
    "systemctl",
    "rustup",
    "gh",
];

/// `find` actions that run commands or write files.
const FIND_ACTIONS: &[&str] = &[
    "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
];

/// git options that run other programs or write files wherever they say, on any subcommand.
const GIT_RISKY_OPTIONS: &[&str] = &[
    "--output",
    "--upload-pack",
    "--receive-pack",
    "--exec",
    "--ext-diff",
    "--config-env",
    "--open-files-in-pager",
    "--textconv",
];

/// git subcommands that are built in; anything else may be an alias, which runs whatever the
/// configuration says. `config` is left out: it can define such aliases and pagers.
const GIT_BUILTINS: &[&str] = &[
    "add",
    "bisect",
    "blame",
    "branch",
    "checkout",
    "cherry-pick",
    "clean",
    "clone",
    "commit",
    "describe",
    "diff",
    "fetch",
    "grep",
    "init",
    "log",
    "ls-files",
    "merge",
    "mv",
    "pull",
    "push",
    "rebase",
    "reflog",
    "remote",
    "reset",
    "restore",
    "revert",
    "rev-parse",
    "rm",
    "shortlog",
    "show",
    "stash",
    "status",
    "switch",
    "tag",
    "worktree",
];

/// The "allow always" key of `command` when it is a plain invocation, else `None`.
pub fn plain_invocation(command: &str) -> Option<String> {
    let words = split_words(command.trim())?;
    let (program, args) = words.split_first()?;
    // An assignment (`PATH=… ls`) or a quoted, empty or option-like program name.
    if program.contains('=') || program.is_empty() || program.starts_with('-') {
        return None;
    }
    let base = program.rsplit('/').next().unwrap_or(program);
    if RUNS_OTHER_CODE.contains(&base) {
        return None;
    }
    if base == "find" && args.iter().any(|a| FIND_ACTIONS.contains(&a.as_str())) {
        return None;
    }
    if !SUBCOMMAND_PROGRAMS.contains(&base) {
        return Some(program.clone());
    }
    // Options before the subcommand (`git -c alias.x=… x`, `cargo +nightly`, `npm -g`) can
    // change what runs: ask.
    let Some(subcommand) = args.first() else {
        return Some(program.clone());
    };
    if subcommand.starts_with(['-', '+']) {
        return None;
    }
    if base == "git"
        && (!GIT_BUILTINS.contains(&subcommand.as_str())
            || args.iter().any(|a| {
                GIT_RISKY_OPTIONS
                    .iter()
                    .any(|risky| a == risky || a.starts_with(&format!("{risky}=")))
                    || a.starts_with("-O")
            }))
    {
        return None;
    }
    Some(format!("{program} {subcommand}"))
}

/// Splits on spaces and tabs, honouring single and double quotes. `None` when the line holds
/// anything but literal words: shell syntax outside quotes, an expansion inside double
/// quotes, a control character (a newline, a CR) anywhere, or an unclosed quote.
fn split_words(command: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut current = String::new();
    let mut in_word = false;
    let mut quote: Option<char> = None;
    for c in command.chars() {
        if c.is_control() && c != '\t' {
            return None;
        }
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some('"'), c) if EXPANDS_IN_DOUBLE_QUOTES.contains(&c) => return None,
            (Some(_), c) => current.push(c),
            (None, c) if SHELL_SYNTAX.contains(&c) => return None,
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, ' ' | '\t') => {
                if in_word {
                    words.push(std::mem::take(&mut current));
                    in_word = false;
                }
            }
            (None, c) => {
                current.push(c);
                in_word = true;
            }
        }
    }
    if quote.is_some() {
        return None;
    }
    if in_word {
        words.push(current);
    }
    Some(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_invocations_get_a_key() {
        let cases = [
            ("ls", "ls"),
            ("  ls -la src  ", "ls"),
            ("ls 'a b' \"c d\"", "ls"),
            ("cargo test --workspace", "cargo test"),
            ("git status", "git status"),
            ("git diff HEAD~1", "git diff"),
            ("find . -name '*.rs'", "find"),
            ("./target/debug/hearth --help", "./target/debug/hearth"),
            ("grep -rn foo src", "grep"),
            ("printf 'ran-%s\\n' 42", "printf"),
            ("echo 'a; b | c > d $HOME'", "echo"),
            ("echo \"a; b\"", "echo"),
            ("cargo", "cargo"),
        ];
        for (command, key) in cases {
            assert_eq!(plain_invocation(command).as_deref(), Some(key), "{command}");
        }
    }

    /// The bypasses the security review found, and their relatives: none gets a key, so an
    /// "always allow" for `ls`, `git` or `find` never covers them.
    #[test]
    fn anything_more_than_a_plain_invocation_gets_none() {
        let cases = [
            "PATH=/tmp/evil:$PATH ls",
            "PATH=/tmp/evil ls",
            "echo x > ../file",
            "ls >> out",
            "ls < in",
            "git -c alias.x='!touch f' x",
            "git -c core.pager=evil log",
            "git x",
            "git config alias.x '!sh'",
            "git log --output=../x",
            "git diff --ext-diff",
            "git grep -Ovim x",
            "git fetch --upload-pack=evil",
            "find . -exec touch f {} +",
            "find . -execdir rm {} ;",
            "find . -delete",
            "find . -fprint ../list",
            "ls; rm -rf /",
            "ls && rm x",
            "ls | sh",
            "ls &",
            "ls\nrm -rf /",
            "ls\rrm",
            "ls $(rm x)",
            "ls `rm x`",
            "ls $HOME",
            "ls \\; rm",
            "echo \"$(id)\"",
            "echo \"`id`\"",
            "echo \"\\\"; rm\"",
            "ls # comment",
            "(ls)",
            "{ ls; }",
            "env ls",
            "sudo ls",
            "xargs rm",
            "sh -c ls",
            "bash -c 'ls'",
            "python3 -c 'import os'",
            "awk 'BEGIN{system(\"id\")}'",
            "perl -e 'system(1)'",
            "sed -i s/a/b/ f",
            "nice ls",
            "timeout 5 ls",
            "/usr/bin/env ls",
            "cargo +nightly build",
            "npm -g install x",
            "ls 'unclosed",
            "ls \u{1b}]52;c;aGk=\u{7}",
            "",
            "   ",
        ];
        for command in cases {
            assert_eq!(plain_invocation(command), None, "{command:?}");
        }
    }
}
