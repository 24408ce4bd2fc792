from flask import jsonify
from flask_restful import abort


class QueryListResource:
    def post(self):
        abort(400, message="Execute permission required")  # safe: error message
        return jsonify({"label": "Set schedule"})  # safe: JSON label

    def get(self):
        return {"title": "Prepare query results"}  # safe: JSON text
