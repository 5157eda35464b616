//! The man page, failover-agent(1): clap_mangen renders what the command
//! line knows (NAME, SYNOPSIS, DESCRIPTION, OPTIONS), this module the rest
//! (COMMANDS with each command's options, FILES, EXIT STATUS, ENVIRONMENT,
//! SEE ALSO). One page: clap_mangen's own SUBCOMMANDS section would point at
//! failover-agent-run(1) and friends, which nobody ships.

use std::io::Write;

use roff::{bold, italic, roman, Inline, Roff};

use crate::config::DEFAULT_PATH;

/// The sections [`render`] writes, in order: `tests/dist-check.sh` checks
/// the shipped page has them.
pub const SECTIONS: &[&str] = &[
    "NAME",
    "SYNOPSIS",
    "DESCRIPTION",
    "OPTIONS",
    "COMMANDS",
    "FILES",
    "EXIT STATUS",
    "ENVIRONMENT",
    "SEE ALSO",
];

/// Writes the page for `cmd` (the binary's `Cli::command()`).
pub fn render(cmd: clap::Command, out: &mut dyn Write) -> std::io::Result<()> {
    let version = cmd.get_version().unwrap_or_default().to_string();
    let man = clap_mangen::Man::new(cmd.clone())
        .title("FAILOVER-AGENT")
        .section("1")
        .source(format!("failover-agent {version}"))
        .manual("System Administration");
    man.render_title(out)?;
    man.render_name_section(out)?;
    man.render_synopsis_section(out)?;
    man.render_description_section(out)?;
    man.render_options_section(out)?;
    let mut roff = Roff::new();
    commands(&mut roff, &cmd);
    files(&mut roff);
    exit_status(&mut roff);
    environment(&mut roff);
    see_also(&mut roff);
    roff.to_writer(out)
}

fn commands(roff: &mut Roff, cmd: &clap::Command) {
    roff.control("SH", ["COMMANDS"]);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        roff.control("TP", []);
        let mut usage = vec![bold(format!("failover-agent {}", sub.get_name()))];
        for arg in sub.get_arguments().filter(|a| !a.is_hide_set()) {
            usage.push(roman(" "));
            // Options are optional; a positional (on|off, the shell) is not.
            if arg.get_long().is_some() {
                usage.push(roman("["));
                usage.extend(arg_usage(arg));
                usage.push(roman("]"));
            } else {
                usage.extend(arg_usage(arg));
            }
        }
        roff.text(usage);
        if let Some(about) = sub.get_long_about().or_else(|| sub.get_about()) {
            roff.text([roman(about.to_string())]);
        }
        let options: Vec<&clap::Arg> = sub
            .get_arguments()
            .filter(|a| !a.is_hide_set() && a.get_help().is_some())
            .collect();
        if !options.is_empty() {
            roff.control("RS", []);
            for arg in options {
                roff.control("TP", []);
                roff.text(arg_usage(arg));
                if let Some(help) = arg.get_long_help().or_else(|| arg.get_help()) {
                    roff.text([roman(help.to_string())]);
                }
            }
            roff.control("RE", []);
        }
    }
}

/// `--no-probe`, or `on|off`, or `<SHELL>`.
fn arg_usage(arg: &clap::Arg) -> Vec<Inline> {
    if let Some(long) = arg.get_long() {
        return vec![bold(format!("--{long}"))];
    }
    let values: Vec<String> = arg
        .get_possible_values()
        .iter()
        .filter(|v| !v.is_hide_set())
        .map(|v| v.get_name().to_string())
        .collect();
    if values.is_empty() {
        let name = arg
            .get_value_names()
            .and_then(|names| names.first())
            .map_or_else(|| arg.get_id().to_string(), ToString::to_string);
        vec![italic(name)]
    } else {
        vec![bold(values.join("|"))]
    }
}

/// A `.TP` paragraph: a bold tag, then its text.
fn item(roff: &mut Roff, tag: &str, text: &str) {
    roff.control("TP", []);
    roff.text([bold(tag)]);
    roff.text([roman(text)]);
}

fn files(roff: &mut Roff) {
    roff.control("SH", ["FILES"]);
    item(
        roff,
        DEFAULT_PATH,
        "The config (TOML), read by every command; --config names another. check-config \
         prints the effective settings, one key a line.",
    );
    item(
        roff,
        "/etc/failover-agent/token",
        "The shared token (the config's token_file): mode 0600, at least 16 characters, the \
         same on both nodes of a shared tunnel. Read by run and check-config only.",
    );
    item(
        roff,
        "/var/lib/failover-agent/maintenance",
        "The maintenance flag (maintenance_flag): while it exists this node's connector is \
         stopped and never started by the agent; one the agent cannot look at (its \
         directory not searchable, a symlink loop) counts as set. Written by the maintenance \
         command.",
    );
    item(
        roff,
        "/etc/failover-agent/worker-token",
        "The Worker's ADMIN_TOKEN (the config's [worker] admin_token_file, if set): mode \
         0600. Read by run (to drain this node at the Worker before a planned stop), \
         check-config and origin.",
    );
    item(
        roff,
        "/var/lib/failover-agent/edge-drained",
        "Present while this node's origin is drained at the Worker by its agent; the origin \
         is given back (auto) once the node serves again, also after a restart.",
    );
    item(
        roff,
        "/var/lib/failover-agent/history.json",
        "The last 20 decisions with their times and reasons (in state_dir), shown by status \
         and /health; written whole and renamed into place. A broken file is ignored with a \
         log line.",
    );
    item(
        roff,
        "/lib/systemd/system/failover-agent.service",
        "The unit (Type=notify, a watchdog, a sandbox).",
    );
    item(
        roff,
        "/usr/share/doc/failover-agent/",
        "The runbook (README.md) and examples: config.tunnel-per-node.example.toml (the \
         recommended setup), config.example.toml (a shared tunnel) and \
         cloudflared-override.conf (the drop-in for cloudflared's unit).",
    );
}

fn exit_status(roff: &mut Roff) {
    roff.control("SH", ["EXIT STATUS"]);
    item(roff, "0", "Success (for run: stopped by a signal).");
    item(
        roff,
        "1",
        "A failure that is not the config: the API could not bind, a task ended, status \
         could not reach the agent, maintenance could not change the flag or the running \
         agent does not see the change (maintenance on: or no agent answers; the flag stays \
         written).",
    );
    item(
        roff,
        "2",
        "The config or the command line is wrong. The message names the setting, the bad \
         value and what is accepted; a TOML syntax error names the file, line and column. \
         The unit does not restart the agent on this status (RestartPreventExitStatus=2).",
    );
}

fn environment(roff: &mut Roff) {
    roff.control("SH", ["ENVIRONMENT"]);
    item(
        roff,
        "JOURNAL_STREAM",
        "Set by systemd: each log line then carries its journald priority (<3> error to <7> \
         debug) instead of a \"failover-agent LEVEL:\" prefix.",
    );
    item(
        roff,
        "NOTIFY_SOCKET, WATCHDOG_USEC",
        "Set by systemd: readiness, status text and watchdog pings (sd_notify).",
    );
}

fn see_also(roff: &mut Roff) {
    roff.control("SH", ["SEE ALSO"]);
    roff.text([
        bold("systemctl"),
        roman("(1), "),
        bold("journalctl"),
        roman("(1), "),
        bold("systemd.service"),
        roman("(5); the runbook in /usr/share/doc/failover-agent/README.md."),
    ]);
}
