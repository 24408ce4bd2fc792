class CreateNotes < ActiveRecord::Migration[7.0]
  def up
    create_table :notes do |t|
      t.string :status, default: "open"
    end
    execute "CREATE TYPE note_status_enum AS ENUM ('open', 'closed', 'hidden')" # safe: DDL
    execute "ALTER DATABASE CURRENT SET timezone TO 'UTC'" # safe: PA401 ALTER DATABASE ... SET is the fix
    execute "SET search_path = public, postgis" # expect: PA401 migration SET through the pooler
  end
end
