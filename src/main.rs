//! The `rackboot` binary: `serve` runs the appliance; the other subcommands use its REST API.

mod cli;

use clap::Parser;

fn main() -> std::process::ExitCode {
    let cli = cli::Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("tokio runtime");
    match rt.block_on(cli::dispatch(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("rackboot: {error:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
