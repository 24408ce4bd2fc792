class OwnerTests {
    void t() { jdbc.execute("SET search_path TO test"); } // safe: PA401 tests not scanned
}
