fn main() {
    println!("chaos: not built yet");
}
