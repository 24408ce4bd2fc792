class Node < ApplicationRecord
  def self.in_area(bbox)
    find_by_sql(["SELECT * FROM current_nodes WHERE tile IN (?)", bbox.tiles]) # safe: plain query
  end

  def self.with_tmp_ids
    connection.execute("CREATE TEMPORARY TABLE tmp_node_ids (id bigint)") # expect: PA406 session temp table
    connection.execute("CREATE TEMP TABLE tmp_way_ids ON COMMIT DROP AS SELECT 1 AS id") # safe: PA406 ON COMMIT DROP
    connection.select_all("SELECT * FROM tmp_node_ids") # safe: plain query
  end

  def self.stream_history
    connection.execute("DECLARE history_cursor CURSOR WITH HOLD FOR SELECT * FROM nodes") # expect: PA407 WITH HOLD cursor
    connection.execute("DECLARE plain_cursor CURSOR FOR SELECT * FROM nodes") # safe: PA407 cursor without HOLD
    connection.execute("FETCH 100 FROM history_cursor") # safe: a FETCH is not flagged itself
  end
end
