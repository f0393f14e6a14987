mod harness;
mod slt;
