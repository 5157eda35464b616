//! The command line as a real process: what check-config prints, how a
//! broken or misspelt config is reported, -v/-q, and the man page and
//! completion scripts the package ships.

// Test code: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod support;

use std::process::{Command, Output};

use support::{free_port, NodeSpec, Scratch, AGENT, TOKEN};

fn node() -> NodeSpec {
    NodeSpec {
        name: "cli",
        role: "standby",
        agent_port: free_port(),
        connector_port: free_port(),
        edge_port: free_port(),
        peer_agent_port: free_port(),
        peer_connector_port: None,
        poll_ms: 60_000,
        takeover_after: 3,
    }
}

fn agent(args: &[&str]) -> Output {
    Command::new(AGENT).args(args).output().expect("runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn check_config_prints_one_aligned_key_a_line_and_never_the_token() {
    let dir = Scratch::new("cli-describe");
    let node = node();
    let path = node.write_config(&dir);
    let out = node.run_cli(&dir, &["check-config", "--no-probe"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    assert!(!stdout.contains(TOKEN), "the token leaked:\n{stdout}");
    let settings: Vec<&str> = stdout.lines().filter(|l| !l.starts_with('#')).collect();
    assert!(settings.len() > 15, "{stdout}");
    let column = settings[0].find(" = ").expect("key = value");
    for line in &settings {
        assert_eq!(
            line.find(" = "),
            Some(column),
            "not aligned: {line:?}\n{stdout}"
        );
    }
    for key in [
        "role ",
        "poll_interval ",
        "connector.ready_url ",
        "log_level ",
    ] {
        assert!(
            settings.iter().any(|l| l.starts_with(key)),
            "no {key}:\n{stdout}"
        );
    }
    // The output is a config: checked again, it prints the same settings.
    let again = dir.path("again.toml");
    std::fs::write(&again, &stdout).unwrap();
    let out2 = agent(&[
        "--config",
        again.to_str().unwrap(),
        "check-config",
        "--no-probe",
    ]);
    assert!(out2.status.success(), "{out2:?}");
    let settings2: Vec<String> = text(&out2.stdout)
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(String::from)
        .collect();
    assert_eq!(settings, settings2);
    let _ = path;
}

/// A flag nobody can look at (here a symlink loop; for the agent's user,
/// also a directory it may not search): check-config says the agent will
/// treat it as set, and still passes (the flag is the operator's to fix).
#[test]
fn check_config_warns_of_a_maintenance_flag_that_cannot_be_looked_at() {
    let dir = Scratch::new("cli-flag");
    let node = node();
    node.write_config(&dir);
    let flag = node.flag(&dir);
    std::os::unix::fs::symlink(flag.file_name().unwrap(), &flag).unwrap();
    let out = node.run_cli(&dir, &["check-config", "--no-probe"]);
    assert!(out.status.success(), "{out:?}");
    let stdout = text(&out.stdout);
    let warning = stdout
        .lines()
        .find(|l| l.starts_with("# warning: maintenance_flag"))
        .unwrap_or_else(|| panic!("no warning about the flag:\n{stdout}"));
    assert!(warning.contains("treated as SET"), "{warning}");

    std::fs::remove_file(&flag).unwrap();
    let out = node.run_cli(&dir, &["check-config", "--no-probe"]);
    assert!(
        !text(&out.stdout).contains("# warning: maintenance_flag"),
        "{out:?}"
    );
}

#[test]
fn a_syntax_error_names_the_file_line_and_column() {
    let dir = Scratch::new("cli-syntax");
    let node = node();
    let good = std::fs::read_to_string(node.write_config(&dir)).unwrap();
    let path = node.config_path(&dir);
    let cases: &[(&str, &str, usize)] = &[
        // A missing closing quote on the third line.
        ("token_file = \"", "token_file = \"/x\nbroken = \"", 3),
        // A key with no value on line 1.
        ("role = \"standby\"", "role =", 1),
    ];
    for (from, to, line) in cases {
        assert!(good.contains(from), "case does not apply: {from}");
        std::fs::write(&path, good.replacen(from, to, 1)).unwrap();
        let out = node.run_cli(&dir, &["check-config"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        let at = format!("config error: {}:{line}:", path.display());
        assert!(stderr.contains(&at), "expected {at:?} in {stderr}");
        assert!(stderr.contains("not valid TOML"), "{stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    }
    // Hostile: bytes that are not UTF-8, and a huge file whose error is on
    // its last line.
    std::fs::write(&path, b"role = \"\xff\xfe\"\n").unwrap();
    let out = node.run_cli(&dir, &["check-config"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(text(&out.stderr).contains("--config"), "{out:?}");
    let huge = format!("{}\n= oops", "# padding\n".repeat(100_000));
    std::fs::write(&path, huge).unwrap();
    let out = node.run_cli(&dir, &["check-config"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(":100002:1: "), "{stderr}");
}

#[test]
fn a_misspelt_key_gets_a_suggestion_a_strange_one_does_not() {
    let dir = Scratch::new("cli-suggest");
    let node = node();
    let good = std::fs::read_to_string(node.write_config(&dir)).unwrap();
    let cases: &[(&str, &str, Option<&str>)] = &[
        (
            "takeover_after =",
            "takeover_afer =",
            Some("`takeover_after`"),
        ),
        ("poll_interval =", "pol_interval =", Some("`poll_interval`")),
        ("ready_url =", "redy_url =", Some("`ready_url`")),
        ("takeover_after =", "colour =", None),
    ];
    for (from, to, hint) in cases {
        assert!(good.contains(from), "case does not apply: {from}");
        std::fs::write(node.config_path(&dir), good.replacen(from, to, 1)).unwrap();
        let out = node.run_cli(&dir, &["check-config"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("unknown key"), "{stderr}");
        match hint {
            Some(hint) => assert!(
                stderr.contains(&format!("did you mean {hint}?")),
                "{to}: {stderr}"
            ),
            None => assert!(!stderr.contains("did you mean"), "{to}: {stderr}"),
        }
    }
}

#[test]
fn durations_compound_and_refused_name_the_key_and_the_forms() {
    let dir = Scratch::new("cli-durations");
    let node = node();
    let good = std::fs::read_to_string(node.write_config(&dir)).unwrap();
    let from = "poll_interval = \"60000ms\"";
    assert!(good.contains(from));
    for (value, shown) in [
        ("\"1m30s\"", "\"1m30s\""),
        ("\"2h\"", "\"2h\""),
        ("\"1m30s500ms\"", "\"1m30s500ms\""),
        ("90", "\"1m30s\""),
        ("\"90\"", "\"1m30s\""),
    ] {
        std::fs::write(
            node.config_path(&dir),
            good.replacen(from, &format!("poll_interval = {value}"), 1),
        )
        .unwrap();
        let out = node.run_cli(&dir, &["check-config", "--no-probe"]);
        let stdout = text(&out.stdout);
        assert!(out.status.success(), "{value}: {out:?}");
        assert!(
            stdout
                .lines()
                .any(|l| l.starts_with("poll_interval ") && l.ends_with(&format!("= {shown}"))),
            "{value}: {stdout}"
        );
    }
    for value in [
        "\"1m1m\"",
        "\"-1s\"",
        "-5",
        "\"\"",
        "\"3d\"",
        "\"30s1m\"",
        "\"99999999999999999999s\"",
        "\"25h\"",
        "\"5ms\"",
        "1.5",
    ] {
        std::fs::write(
            node.config_path(&dir),
            good.replacen(from, &format!("poll_interval = {value}"), 1),
        )
        .unwrap();
        let out = node.run_cli(&dir, &["check-config"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{value}: {stderr}");
        assert!(stderr.contains("`poll_interval`"), "{value}: {stderr}");
        assert!(stderr.contains("\"1m30s\""), "no accepted forms: {stderr}");
    }
}

#[test]
fn log_level_and_the_verbosity_flags() {
    let dir = Scratch::new("cli-level");
    let node = node();
    let good = std::fs::read_to_string(node.write_config(&dir)).unwrap();
    std::fs::write(
        node.config_path(&dir),
        format!("log_level = \"loud\"\n{good}"),
    )
    .unwrap();
    let out = node.run_cli(&dir, &["check-config"]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("`log_level`") && stderr.contains("\"debug\""),
        "{stderr}"
    );

    std::fs::write(
        node.config_path(&dir),
        format!("log_level = \"warning\"\n{good}"),
    )
    .unwrap();
    let out = node.run_cli(&dir, &["-v", "check-config", "--no-probe"]);
    assert!(out.status.success(), "{out:?}");
    assert!(text(&out.stdout).contains("\"warning\""));
    // -v and -q together make no sense: refused by the parser (exit 2).
    let out = node.run_cli(&dir, &["-v", "-q", "check-config"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // A config error is an error: -qqq still shows it.
    let out = agent(&["-qqq", "--config", "/nonexistent.toml", "check-config"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--config"), "{out:?}");
    let help = text(&agent(&["--help"]).stdout);
    for word in ["--verbose", "--quiet", "log_level", "debug"] {
        assert!(help.contains(word), "--help lacks {word}:\n{help}");
    }
}

#[test]
fn the_man_page_has_its_sections_and_names_no_missing_page() {
    let out = agent(&["manpage"]);
    assert!(out.status.success());
    let page = text(&out.stdout).replace("\\-", "-");
    let headings: Vec<String> = page
        .lines()
        .filter_map(|l| l.strip_prefix(".SH "))
        .map(|h| h.trim_matches('"').to_string())
        .collect();
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "COMMANDS",
        "FILES",
        "EXIT STATUS",
        "SEE ALSO",
    ] {
        assert!(
            headings.iter().any(|h| h == section),
            "no {section}: {headings:?}"
        );
    }
    assert!(
        !page.contains("failover-agent-run"),
        "links a page not shipped"
    );
    for command in [
        "run",
        "check-config",
        "status",
        "maintenance",
        "completions",
        "manpage",
    ] {
        assert!(
            page.contains(&format!("failover-agent {command}")),
            "COMMANDS lacks {command}"
        );
    }
    assert!(
        page.contains("on|off") && page.contains("--no-probe"),
        "{page}"
    );
}

/// bash itself, with COMP_WORDS as the shell sets them on <TAB>.
#[test]
fn bash_completes_past_the_subcommand() {
    if Command::new("bash").arg("-c").arg("true").status().is_err() {
        eprintln!("skipped: no bash");
        return;
    }
    let dir = Scratch::new("cli-completion");
    let script = dir.path("failover-agent.bash");
    let out = agent(&["completions", "bash"]);
    assert!(out.status.success());
    std::fs::write(&script, &out.stdout).unwrap();
    let complete = |words: &str| -> String {
        let program = format!(
            "source '{}'; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
             f=$(complete -p failover-agent | sed -E 's/.* -F ([^ ]+) .*/\\1/'); \
             \"$f\" failover-agent \"${{COMP_WORDS[COMP_CWORD]}}\" \
             \"${{COMP_WORDS[COMP_CWORD-1]}}\"; echo \"${{COMPREPLY[*]}}\"",
            script.display()
        );
        let out = Command::new("bash")
            .arg("-c")
            .arg(program)
            .output()
            .unwrap();
        text(&out.stdout).trim().to_string()
    };
    let words = complete("failover-agent maintenance ''");
    let words: Vec<&str> = words.split(' ').collect();
    assert!(words.contains(&"on") && words.contains(&"off"), "{words:?}");
    assert_eq!(complete("failover-agent -c x.toml maintenance o"), "on off");
    assert!(complete("failover-agent check-config --").contains("--no-probe"));
    assert!(complete("failover-agent status --j").contains("--json"));
    assert!(complete("failover-agent completions ''").contains("bash"));
    assert!(complete("failover-agent ch").contains("check-config"));
}
