//! Shell completions and man pages for Plinth's binaries, made from each one's command line
//! definition (clap's `clap_complete` and `clap_mangen`), so they cannot drift from the options the
//! binary takes. Each binary offers them as `generate completions SHELL` and `generate man`; the
//! Debian packages install what they print.

use std::io::{self, Write};

/// What `generate` prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Subcommand)]
pub enum Generate {
    /// A shell's completion script, on standard output.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The man page (roff), on standard output.
    Man,
}

/// Writes what `what` asks for `command` (the binary's whole command line) to `out`.
pub fn generate(what: Generate, mut command: clap::Command, out: &mut dyn Write) -> io::Result<()> {
    match what {
        Generate::Completions { shell } => {
            let name = command.get_name().to_string();
            clap_complete::generate(shell, &mut command, name, out);
            Ok(())
        }
        Generate::Man => clap_mangen::Man::new(command).render(out),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command() -> clap::Command {
        clap::Command::new("demo")
            .about("A demo")
            .arg(
                clap::Arg::new("controller")
                    .long("controller")
                    .help("Where"),
            )
            .subcommand(clap::Command::new("nodes").about("Nodes"))
    }

    #[test]
    fn completions_name_the_options_and_subcommands() {
        let mut out = Vec::new();
        let what = Generate::Completions {
            shell: clap_complete::Shell::Bash,
        };
        generate(what, command(), &mut out).unwrap();
        let script = String::from_utf8(out).unwrap();
        assert!(
            script.contains("--controller") && script.contains("nodes"),
            "{script}"
        );
    }

    #[test]
    fn the_man_page_is_roff_with_the_options() {
        let mut out = Vec::new();
        generate(Generate::Man, command(), &mut out).unwrap();
        let page = String::from_utf8(out).unwrap();
        assert!(
            page.starts_with(".ie") || page.contains(".TH demo"),
            "{page}"
        );
        assert!(page.contains("controller"), "{page}");
    }
}
