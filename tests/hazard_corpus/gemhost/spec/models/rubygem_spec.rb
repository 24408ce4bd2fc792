RSpec.describe Rubygem do
  it "sets the search path" do
    ActiveRecord::Base.connection.execute("SET search_path TO test_schema") # safe: PA401 spec code is not scanned
    ActiveRecord::Base.connection.execute("LISTEN test_channel") # safe: PA402 spec code is not scanned
  end
end
