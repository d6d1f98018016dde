//! `inlay`: inspect, disassemble, run and instrument AMD GPU code.

mod demangle;
mod inspect;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use inlay_codeobj::file::MappedFile;

#[derive(Parser)]
#[command(
    name = "inlay",
    version,
    about = "AMD GPU machine code: inspect, disassemble, run, instrument"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show what a file holds: code objects, kernels (descriptor, metadata, arguments),
    /// device functions, variables, relocations, HIP kernel handles.
    Inspect {
        /// A code object, offload bundle, compressed bundle, or host executable/library.
        file: PathBuf,
        /// Print the documented JSON document (docs/inspect-json.md) instead of text.
        #[arg(long)]
        json: bool,
        /// Only this kernel (mangled name, demangled name, or demangled name without parameters).
        #[arg(long)]
        kernel: Option<String>,
        /// Only list code objects and their kernel names, one per line.
        #[arg(long, conflicts_with = "json")]
        list: bool,
    },
    /// Inspect a built-in example code object (a gfx90a vector add).
    Demo,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Inspect {
            file,
            json,
            kernel,
            list,
        } => {
            let opts = inspect::Options {
                json,
                kernel: kernel.as_deref(),
                list,
            };
            MappedFile::open(&file)
                .map_err(|e| e.to_string())
                .and_then(|f| inspect::inspect(f.bytes(), &file.display().to_string(), &opts))
        }
        Command::Demo => demo(),
    };
    match result {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            // A closed pipe (e.g. `| head`) is not an error worth reporting.
            let _ = stdout
                .write_all(text.as_bytes())
                .and_then(|_| stdout.flush());
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("inlay: {e}");
            ExitCode::FAILURE
        }
    }
}

/// The built-in example: a project fixture compiled into the binary.
const DEMO_NAME: &str = "fixtures/gfx90a/v5/vector_add.hsaco";
const DEMO_CODE_OBJECT: &[u8] = include_bytes!("../../../fixtures/gfx90a/v5/vector_add.hsaco");

fn demo() -> Result<String, String> {
    let opts = inspect::Options {
        json: false,
        kernel: None,
        list: false,
    };
    inspect::inspect(DEMO_CODE_OBJECT, DEMO_NAME, &opts)
}
