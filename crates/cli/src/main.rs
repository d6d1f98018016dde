//! `inlay`: inspect, disassemble, run and instrument AMD GPU code.

mod demangle;
mod demo;
mod disasm;
mod extract;
mod hip_compat;
mod inspect;
mod run;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use inlay_codeobj::file::MappedFile;
use rayon::prelude::*;

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
    /// Disassemble: byte for byte what `llvm-objdump-19 -d` prints for a code object, and the
    /// same for every code object inside a bundle, fat binary or host library.
    Disasm {
        /// Code objects, offload bundles, compressed bundles, or host executables/libraries;
        /// listed one after another, as llvm-objdump does with several files.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Only this kernel and the device functions it calls.
        #[arg(long)]
        kernel: Option<String>,
        /// Structured instructions with the registers each reads and writes
        /// (docs/disasm-json.md), one JSON document per file.
        #[arg(long)]
        json: bool,
    },
    /// Write the code objects inside a bundle, compressed bundle or host binary to files.
    Extract {
        file: PathBuf,
        /// Only code objects for this processor (`gfx90a`) or target ID (`gfx90a:xnack-`).
        #[arg(long)]
        target: Option<String>,
        /// Directory to write `NNNN-<target id>.hsaco` files to.
        #[arg(short, long, default_value = ".")]
        output: PathBuf,
    },
    /// The whole path on a built-in gfx90a vector add: inspect, disassemble, run on the
    /// virtual GPU, instrument with counting hooks and compare.
    Demo,
    /// Run a program against Inlay's HSA runtime (drop-in libhsa-runtime64.so.1) and its
    /// virtual GPU. Build the runtime first: `cargo build --release` builds it with inlay.
    Run {
        /// Attach a tool (instr-count, opcode-hist, mem-trace, kernel-args); repeatable.
        #[arg(long = "tool", value_name = "NAME")]
        tools: Vec<String>,
        /// A tool option KEY=VALUE (instr-count/opcode-hist: mode=block|instruction,
        /// count=wave|thread; any tool: output=PATH for text, json=PATH for JSON Lines).
        #[arg(long = "tool-opt", value_name = "KEY=VALUE")]
        tool_opts: Vec<String>,
        /// The program and its arguments.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true, required = true)]
        command: Vec<std::ffi::OsString>,
    },
    /// Print the shell lines that make programs started from this shell use Inlay's runtime.
    Env,
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
        Command::Disasm {
            files,
            kernel,
            json,
        } => {
            let opts = disasm::Options {
                kernel: kernel.as_deref(),
            };
            if !json {
                return disasm::list_files(&files, &opts);
            }
            let listing = |file: &PathBuf| -> Result<String, String> {
                let name = file.display().to_string();
                let f = MappedFile::open(file).map_err(|e| e.to_string())?;
                if json {
                    let doc = disasm::disasm_json(f.bytes(), &name, &opts)?;
                    let text = serde_json::to_string_pretty(&doc).map_err(|e| e.to_string())?;
                    Ok(text + "\n")
                } else {
                    disasm::disasm(f.bytes(), &name, &opts)
                }
            };
            // Files are listed in parallel, a few per core at a time, and printed in order.
            let mut stdout = std::io::stdout().lock();
            let batch = 2 * rayon::current_num_threads();
            for chunk in files.chunks(batch) {
                let listings: Vec<Result<String, String>> = chunk.par_iter().map(listing).collect();
                for listing in listings {
                    match listing {
                        // A closed pipe (e.g. `| head`) ends the listing quietly.
                        Ok(text) => {
                            if stdout.write_all(text.as_bytes()).is_err() {
                                return ExitCode::SUCCESS;
                            }
                        }
                        Err(e) => {
                            eprintln!("inlay: {e}");
                            return ExitCode::FAILURE;
                        }
                    }
                }
            }
            let _ = stdout.flush();
            return ExitCode::SUCCESS;
        }
        Command::Extract {
            file,
            target,
            output,
        } => MappedFile::open(&file)
            .map_err(|e| e.to_string())
            .and_then(|f| {
                extract::extract(
                    f.bytes(),
                    &file.display().to_string(),
                    target.as_deref(),
                    &output,
                )
            }),
        Command::Demo => demo(),
        Command::Run {
            tools,
            tool_opts,
            command,
        } => {
            return match run::run(&command, &tools, &tool_opts) {
                Ok(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
                Err(e) => {
                    eprintln!("inlay: {e}");
                    ExitCode::FAILURE
                }
            };
        }
        Command::Env => run::env_lines(),
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
    let mut text = inspect::inspect(DEMO_CODE_OBJECT, DEMO_NAME, &opts)?;
    let listing = disasm::disasm(
        DEMO_CODE_OBJECT,
        DEMO_NAME,
        &disasm::Options { kernel: None },
    )?;
    text.push_str(&listing);
    text.push_str(&demo::run(DEMO_CODE_OBJECT)?);
    Ok(text)
}
