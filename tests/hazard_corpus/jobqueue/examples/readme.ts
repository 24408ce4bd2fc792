await client.query("SET search_path TO example"); // safe: PA401 example folder not scanned
