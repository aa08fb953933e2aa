#[actix_web::main]
async fn main() {
    let code = agenticos::cli::run(std::env::args().collect()).await;
    std::process::exit(code);
}
