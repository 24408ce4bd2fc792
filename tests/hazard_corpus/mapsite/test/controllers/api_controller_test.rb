class ApiControllerTest < ActionDispatch::IntegrationTest
  def test_timeout
    ActiveRecord::Base.connection.execute("SET statement_timeout = 1") # safe: PA401 test code not scanned
  end
end
