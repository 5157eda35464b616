//! Shell completion scripts from the command line itself (clap_complete),
//! with one repair for bash.
//!
//! clap_complete's bash script (4.6.12 and before, clap-rs/clap#6421)
//! spells a subcommand's state two ways when the binary's name has a
//! hyphen: the loop that reads the words sets
//! `cmd="failover__agent__subcmd__maintenance"`, while the `case` arms are
//! `failover__subcmd__agent__subcmd__maintenance)`: the arms escape the bin
//! name's `-` as the subcommand separator. No arm matches, so nothing
//! completes after the subcommand. The arms are renamed to the loop's
//! spelling; [`bash`] refuses a script in which any state the loop can set
//! still has no arm, so a future clap_complete that changes the spelling
//! fails the test instead of shipping a dead script.

use clap_complete::Shell;

/// The script for `shell`, for a binary called `name`.
pub fn script(shell: Shell, cmd: &mut clap::Command, name: &str) -> Result<String, String> {
    let mut out = Vec::new();
    clap_complete::generate(shell, cmd, name, &mut out);
    let text = String::from_utf8(out).map_err(|e| format!("not UTF-8: {e}"))?;
    match shell {
        Shell::Bash => bash(&text, name),
        _ => Ok(text),
    }
}

fn bash(text: &str, name: &str) -> Result<String, String> {
    let escaped = name.replace('-', "__");
    let mangled = name.replace('-', "__subcmd__");
    let repaired = if escaped == mangled {
        text.to_string()
    } else {
        text.replace(
            &format!("{mangled}__subcmd__"),
            &format!("{escaped}__subcmd__"),
        )
    };
    let missing: Vec<&str> = states_set(&repaired)
        .into_iter()
        .filter(|state| !repaired.contains(&format!("\n        {state})\n")))
        .collect();
    if missing.is_empty() {
        Ok(repaired)
    } else {
        Err(format!(
            "the bash completion has no case arm for {}: clap_complete changed how it names \
             states; see src/completion.rs",
            missing.join(", ")
        ))
    }
}

/// Every `cmd="STATE"` the word loop can set.
fn states_set(script: &str) -> Vec<&str> {
    script
        .lines()
        .filter_map(|line| line.trim().strip_prefix("cmd=\""))
        .filter_map(|rest| rest.strip_suffix('"'))
        .filter(|state| !state.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cli() -> clap::Command {
        clap::Command::new("my-app")
            .arg(clap::Arg::new("config").long("config"))
            .subcommand(
                clap::Command::new("check-config")
                    .arg(clap::Arg::new("no-probe").long("no-probe").num_args(0)),
            )
            .subcommand(
                clap::Command::new("maintenance")
                    .arg(clap::Arg::new("state").value_parser(["on", "off"])),
            )
    }

    #[test]
    fn every_state_the_loop_sets_has_an_arm() {
        let mut raw = Vec::new();
        clap_complete::generate(Shell::Bash, &mut cli(), "my-app", &mut raw);
        let raw = String::from_utf8(raw).unwrap_or_default();
        // The bug this module repairs: without the repair, arms are missing.
        assert!(bash(&raw.replace("my__subcmd__app__subcmd__", "x"), "my-app").is_err());
        let script = script(Shell::Bash, &mut cli(), "my-app").unwrap_or_default();
        let states = states_set(&script);
        assert!(
            states.contains(&"my__app__subcmd__maintenance"),
            "{states:?}"
        );
        assert!(
            states.contains(&"my__app__subcmd__check__subcmd__config"),
            "{states:?}"
        );
        assert!(!script.contains("my__subcmd__app"), "{script}");
    }

    #[test]
    fn a_name_without_a_hyphen_is_left_alone() {
        let mut cmd = cli().name("myapp");
        let mut raw = Vec::new();
        clap_complete::generate(Shell::Bash, &mut cmd.clone(), "myapp", &mut raw);
        let script = script(Shell::Bash, &mut cmd, "myapp").unwrap_or_default();
        assert_eq!(script.as_bytes(), raw.as_slice());
    }
}
