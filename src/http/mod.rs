//! A hand-written HTTP/1.1 client on `std::net::TcpStream`.
